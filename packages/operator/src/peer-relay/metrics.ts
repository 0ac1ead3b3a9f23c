// The peer relay's Prometheus metrics (its PeerSlice cache's are @flock/kube's, same prefix).
import { collectDefaultMetrics, Counter, Gauge, type Registry } from 'prom-client';
import type { Verdict } from './token-review.js';

export const RELAY_METRICS_PREFIX = 'flock_peer_relay_';

export class RelayMetrics {
  /** Streams begun, by how: a full snapshot or a resume from the agent's position. */
  readonly streams: Counter<'start'>;
  /** Writes of live changes to agents (changes gathered over the coalescing window each). */
  readonly writes: Counter;
  /** Streams cut off because their agent did not read fast enough. */
  readonly cutOff: Counter;
  /** Requests by what the token check said (allowed, denied, busy; limited: not asked). */
  readonly tokens: Counter<'verdict'>;
  /** Connections closed at once: their address had too many open. */
  readonly refused: Counter;

  constructor(
    registry: Registry,
    state: { agents: () => number; records: () => number; changes: () => number },
    options: { processMetrics?: boolean } = {},
  ) {
    const p = RELAY_METRICS_PREFIX;
    const registers = [registry];
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: p });
    new Gauge({
      name: `${p}agents`,
      help: 'Agents streaming from this relay now.',
      registers,
      collect() {
        this.set(state.agents());
      },
    });
    new Gauge({
      name: `${p}records`,
      help: 'Pod records this relay holds (every PeerSlice).',
      registers,
      collect() {
        this.set(state.records());
      },
    });
    new Gauge({
      name: `${p}changes`,
      help: "Record changes logged since this relay started (its log's position).",
      registers,
      collect() {
        this.set(state.changes());
      },
    });
    this.streams = new Counter({
      name: `${p}streams_total`,
      help: 'Streams begun, by start: snapshot (every record) or resume (the changes after the agent’s position).',
      labelNames: ['start'],
      registers,
    });
    this.writes = new Counter({
      name: `${p}writes_total`,
      help: 'Writes of live changes and ticks to agents, each what gathered over the coalescing window.',
      registers,
    });
    this.cutOff = new Counter({
      name: `${p}cut_off_total`,
      help: 'Streams cut off because their agent did not read its changes fast enough.',
      registers,
    });
    this.refused = new Counter({
      name: `${p}connections_refused_total`,
      help: 'Connections closed at once because their address had too many open.',
      registers,
    });
    this.tokens = new Counter({
      name: `${p}requests_total`,
      help: 'Stream requests by what the token check said: allowed, denied, busy; limited: a new token refused unasked, its source (IPv4 address, IPv6 /64) having shown too many denied tokens.',
      labelNames: ['verdict'],
      registers,
    });
  }

  token(verdict: Verdict): void {
    this.tokens.inc({ verdict });
  }
}
