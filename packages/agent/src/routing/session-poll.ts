// BIRD's BGP sessions as last seen: `show protocols all` every few seconds (one attempt per poll,
// so a missing BIRD is reported at once, never waited for). The NodeConfig status and
// `flock-agent status` read the observation; a failed poll is an observation too.
import type { BirdControl, ProtocolDetail } from '@flock/bird';
import { Loop } from '@flock/kube';

export type BgpObservation = { protocols: ProtocolDetail[] } | { error: string };

export class SessionPoll {
  private seen: BgpObservation | undefined;
  private readonly loop: Loop;

  constructor(
    private readonly bird: Pick<BirdControl, 'showProtocolsAll'>,
    periodMs: number,
    /** Called after every poll. */
    private readonly onPoll: () => void,
  ) {
    // Not counted: a poll never fails (an error is an observation).
    this.loop = new Loop({
      name: 'bgp-status-poll',
      sync: () => this.poll(),
      periodMs,
      periodJitter: 0,
      backoff: false,
    });
  }

  /** BIRD's protocols from the last poll (or why they could not be read); undefined before. */
  get observation(): BgpObservation | undefined {
    return this.seen;
  }

  start(): void {
    this.loop.start();
    void this.loop.run(); // never rejects: poll() turns errors into observations
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  async poll(): Promise<void> {
    try {
      this.seen = { protocols: await this.bird.showProtocolsAll() };
    } catch (error) {
      this.seen = { error: error instanceof Error ? error.message : String(error) };
    }
    this.onPoll();
  }
}
