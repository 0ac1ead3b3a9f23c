// The NetworkPolicy reconciler: keeps flock's nftables table equal to what the cluster's
// policies say about this node's pods. Passes are triggered by cache changes and allocation
// changes (debounced), by a self-heal tick, and — with the new pod included — by ADD, alongside
// its datapath step and before it commits, so a new pod's rules are in force before its ADD
// returns. All passes are runs of one Loop (policy), so applies never interleave; ADDs that
// arrive while a pass runs share the next one, and a failed pass is retried with backoff.
import { CniErrorCode, type AddressClaim, type Logger, type Pod } from '@flock/api';
import type { AllocationEntry } from '../store/index.js';
import { Loop, type Cache, type KubeObject } from '@flock/kube';
import { IncrementalTranslator, renderTable, type NftTable, type SnatOptions } from '@flock/netpol';
import type { PodLookup } from '../node/pods.js';
import { claimLookup } from '../claims/cache.js';
import { CniCommandError } from '../core/cni-error.js';
import type { AgentMetrics } from '../core/metrics.js';
import { samePolicyPod, type PolicyCaches } from './caches.js';
import type { PolicyApplier } from './nft.js';
import {
  appliedResult,
  failedResult,
  sameResult,
  type PolicyResult,
  type PolicyResultListener,
} from './result.js';
import { ClusterPolicyChecker } from './cluster-validate.js';
import { PeerAddresses, logIgnored } from './peer-addresses.js';
import type { PeerRanges } from './peer-ranges.js';
import { LocalPods } from './local-pods.js';
import { buildPolicyState, type LocalAttachment, type PolicyProblem } from './state.js';
import { PolicyChecker } from './validate.js';

/** Tell a policy's owner that flock cannot enforce it (a Warning Event on the NetworkPolicy). */
export type PolicyWarning = (policy: PolicyProblem) => void;

export interface PolicyReconcilerOptions {
  caches: PolicyCaches;
  /** The allocation store: committed entries are this node's pods. */
  store: { entries(): AllocationEntry[] };
  /** Where a new pod is looked up when the cluster-wide cache has not seen it yet. */
  pods: PodLookup;
  applier: PolicyApplier;
  logger: Logger;
  warn?: PolicyWarning;
  /** Delay between a change and the pass it triggers (changes meanwhile share it; default 100 ms). */
  debounceMs?: number;
  /** Self-heal: re-apply the whole table this often even when unchanged (default 30 s). */
  resyncMs?: number;
  /** How long an ADD waits for the caches' first sync before it asks to be retried (default 10 s). */
  syncTimeoutMs?: number;
  /** Log dropped packets (rate-limited, per pod chain); 0 or absent: off. */
  logDroppedPerSecond?: number;
  /** The node's TCP ports local pods may not reach (the agent's health and metrics port). */
  nodePortsClosedToPods?: readonly number[];
  /** Private IPv4: the SNAT the table carries now (read every pass; policy/snat.ts). */
  snat?: () => SnatOptions | undefined;
  /**
   * Address ownership: the claims (waited for and watched like the other caches; started by
   * their owner) and what each local attachment may use as its source addresses. Absent: every
   * attachment uses all of its addresses.
   */
  floating?: {
    claims: Pick<Cache<AddressClaim>, 'synced' | 'addHandler' | 'getObject'>;
    sourcesOf: (entry: AllocationEntry, pod: Pod | undefined) => LocalAttachment['sources'];
  };
  /**
   * Which peer addresses count (peer-addresses.ts): the NodeConfigs' ranges (started, waited for
   * and watched by the reconciler) and the pod ranges of nodes flock does not run. Absent: every
   * address in a peer's status.podIPs.
   */
  peerRanges?: PeerRanges;
  /** Pass durations, apply errors, ignored peer addresses and loop runs (loop policy). */
  metrics?: Pick<
    AgentMetrics,
    'loops' | 'policyPassDuration' | 'policyApplyErrors' | 'peerAddressesIgnored'
  >;
}

const LOOP = 'policy';

export class PolicyReconciler {
  private readonly loop: Loop<PolicyResult | undefined>;
  private readonly checker = new PolicyChecker();
  private readonly clusterChecker = new ClusterPolicyChecker();
  /** Keeps selector results and set contents between passes: a pass costs what changed. */
  private readonly translator = new IncrementalTranslator();
  private readonly locals: LocalPods;
  /** Peer pods' addresses outside their node's ranges left out (absent: peerRanges absent). */
  private readonly peers: PeerAddresses | undefined;
  private readonly listeners = new Set<PolicyResultListener>();
  /** Policy (uid or key) → the problem already reported by an Event. */
  private readonly warned = new Map<string, string>();
  private readonly unsubscribe: (() => void)[] = [];
  /** resync() asked for the next pass to start from scratch. */
  private force = false;
  private stopped = false;
  private last: PolicyResult | undefined;
  private passCount = 0;
  /** The caches have synced: before that a pass would see a partial cluster and open things. */
  private complete = false;
  private readonly synced: Promise<void>;

  constructor(private readonly options: PolicyReconcilerOptions) {
    const { pods, namespaces, policies, cluster } = options.caches;
    this.synced = Promise.all([
      pods.synced,
      namespaces.synced,
      policies.synced,
      cluster?.ready,
      options.floating?.claims.synced,
      options.peerRanges?.synced,
    ]).then(() => {
      this.complete = true;
    });
    this.synced.catch(() => undefined); // stopped before sync
    const { peerRanges, floating } = options;
    this.locals = new LocalPods({
      store: options.store,
      cached: options.caches.pods,
      pods: options.pods,
      ...(floating ? { sourcesOf: floating.sourcesOf } : {}),
    });
    this.peers =
      peerRanges &&
      new PeerAddresses({
        nodeRanges: (node) => peerRanges.of(node),
        otherRanges: peerRanges.otherRanges,
        ...(floating ? { claimOf: claimLookup(floating.claims) } : {}),
        ignored: logIgnored(options.logger, options.metrics?.peerAddressesIgnored),
      });
    const resyncMs = options.resyncMs ?? 30_000;
    this.loop = new Loop({
      name: LOOP,
      // The tick is the self-heal pass.
      sync: (run) => this.runPass(run.ticked),
      periodMs: resyncMs,
      debounceMs: options.debounceMs ?? 100,
      backoff: { baseMs: 1000, maxMs: Math.max(1000, resyncMs), jitter: 0.2 },
      ...(options.metrics ? { metrics: options.metrics.loops } : {}),
    });
  }

  /**
   * Start the caches (but the shared pod cache: its owner starts it) and the self-heal tick; the
   * first pass runs once the caches have synced.
   */
  start(): void {
    const { pods, namespaces, policies } = this.options.caches;
    const trigger = () => this.trigger();
    // Replayed or relisted objects come as updates with equal content: no pass for those.
    const onChange = <T>(same: (a: T, b: T) => boolean) => ({
      onAdd: trigger,
      onDelete: trigger,
      onUpdate: (a: T, b: T) => void (same(a, b) || trigger()),
    });
    const sameJson = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b);
    this.unsubscribe.push(
      pods.addHandler(onChange(samePolicyPod), { replay: false }),
      namespaces.addHandler(onChange(sameJson), { replay: false }),
      policies.addHandler(
        onChange<KubeObject>(
          (a, b) => a === b || a.metadata.resourceVersion === b.metadata.resourceVersion,
        ),
        { replay: false },
      ),
    );
    const claims = this.options.floating?.claims;
    if (claims) this.unsubscribe.push(claims.addHandler(onChange(sameJson), { replay: false }));
    namespaces.start();
    policies.start();
    this.options.caches.cluster?.start(trigger);
    const peerRanges = this.options.peerRanges;
    if (peerRanges) this.unsubscribe.push(peerRanges.start(trigger));
    // The first pass as soon as the caches are complete, not a debounce later.
    void this.synced.then(
      () => this.loop.run().catch(() => undefined), // reported and logged by the pass
      () => undefined,
    );
    this.loop.start();
  }

  /** Resolves true once the caches have synced, false after `timeoutMs`. */
  async waitForSync(timeoutMs: number): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs)));
    try {
      return await Promise.race([this.synced.then(() => true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const u of this.unsubscribe.splice(0)) u();
    await this.loop.stop();
    const { namespaces, policies, cluster } = this.options.caches;
    await Promise.all([
      namespaces.stop(),
      policies.stop(),
      cluster?.stop(),
      this.options.peerRanges?.stop(),
    ]);
  }

  /** Subscribe to results (each pass whose result differs from the previous one). */
  onResult(listener: PolicyResultListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Passes started so far (each builds and translates the whole state). */
  get passes(): number {
    return this.passCount;
  }

  /** The result of the latest pass; undefined before the first. */
  get lastResult(): PolicyResult | undefined {
    return this.last;
  }

  /** Something changed: a pass after the debounce delay (one pass for a burst of changes). */
  trigger(): void {
    this.loop.trigger();
  }

  /** Self-heal: re-apply even when nothing changed (someone may have flushed the table). */
  resync(): Promise<PolicyResult | undefined> {
    this.force = true;
    return this.loop.run().catch(() => undefined);
  }

  /**
   * A pass now (behind any running one; callers while one runs share the next); rejects when it
   * fails. Undefined when stopped, or before the caches synced.
   */
  reconcile(): Promise<PolicyResult | undefined> {
    return this.loop.run();
  }

  /**
   * The CNI hook: while the datapath wires the new pod and before its entry commits, apply the
   * table with the pod included (its rules name the veth, which need not exist yet). Throws
   * (and the ADD fails, undoing everything) when that fails.
   */
  async beforeCommit(entry: AllocationEntry): Promise<void> {
    const timeoutMs = this.options.syncTimeoutMs ?? 10_000;
    if (!(await this.waitForSync(timeoutMs))) {
      throw new CniCommandError(
        CniErrorCode.TryAgainLater,
        `NetworkPolicy caches have not synced after ${timeoutMs} ms; retry`,
      );
    }
    const key = await this.locals.admit(entry);
    try {
      const done = await this.reconcile();
      if (!done) throw new Error('the agent is stopping');
    } catch (error) {
      this.locals.withdraw(key);
      throw new Error(`NetworkPolicy for the new pod: ${(error as Error).message}`);
    }
  }

  /** One run of the loop: nothing before the caches synced (a partial cluster opens things). */
  private async runPass(ticked: boolean): Promise<PolicyResult | undefined> {
    const force = ticked || this.force;
    this.force = false;
    if (this.stopped || !this.complete) return undefined;
    return this.timedPass(force);
  }

  /** One pass, timed when the reconciler has metrics (the Loop counts it). */
  private async timedPass(force: boolean): Promise<PolicyResult> {
    const metrics = this.options.metrics;
    if (!metrics) return this.pass(force);
    const end = metrics.policyPassDuration.startTimer();
    let outcome = 'error';
    try {
      const result = await this.pass(force);
      outcome = result.ok ? 'ok' : 'not-enforceable';
      return result;
    } catch (error) {
      if (this.last && !this.last.ok && this.last.reason !== 'PolicyNotEnforceable')
        metrics.policyApplyErrors.inc({ reason: this.last.reason });
      throw error;
    } finally {
      end({ result: outcome });
    }
  }

  /** Where pods have addresses: known from the NodeConfigs (and the configured other ranges). */
  private podRanges(): { podRanges?: readonly string[] } {
    const peerRanges = this.options.peerRanges;
    return peerRanges ? { podRanges: peerRanges.all() } : {};
  }

  /**
   * Build, translate (incrementally), render, apply (a diff when only elements or pod chains
   * changed); report. Rejects when no table could be applied.
   */
  private async pass(force: boolean): Promise<PolicyResult> {
    this.passCount++;
    const { caches, applier } = this.options;
    const locals = this.locals.attachments();
    const built = buildPolicyState({
      namespaces: caches.namespaces.list(),
      pods: caches.pods.list(),
      policies: caches.policies.list().flatMap((raw) => this.checker.check(raw) ?? []),
      clusterPolicies: (caches.cluster?.clusterPolicies() ?? []).flatMap(
        (raw) => this.clusterChecker.check(raw) ?? [],
      ),
      nodes: caches.cluster?.nodeList() ?? [],
      locals,
      ...(this.peers ? { admitPeer: this.peers.pass() } : {}),
      ...this.podRanges(),
    });
    // Self-heal passes start from scratch: a full translation and a full replace of the table.
    if (force) {
      this.translator.reset();
      applier.forget();
    }
    let table: NftTable;
    let result: PolicyResult;
    try {
      const ir = this.translator.translate(built.state);
      const snat = this.options.snat?.();
      table = renderTable(ir, {
        ...(snat ? { snat } : {}),
        ...(this.options.logDroppedPerSecond
          ? { logDroppedPerSecond: this.options.logDroppedPerSecond }
          : {}),
        ...(this.options.nodePortsClosedToPods
          ? { nodePortsClosedToPods: this.options.nodePortsClosedToPods }
          : {}),
      });
      result = appliedResult(built, ir);
    } catch (error) {
      throw this.report(failedResult('TranslateFailed', error), error);
    }
    try {
      await applier.applyTable(table);
    } catch (error) {
      throw this.report(failedResult('ApplyFailed', error), error);
    }
    this.report(result);
    this.warnAbout(built.problems);
    return result;
  }

  /** Publish a result (when it differs from the last one); returns an error to throw for failures. */
  private report(result: PolicyResult, cause?: unknown): Error {
    if (!sameResult(this.last, result)) {
      this.last = result;
      const log = result.ok ? 'info' : result.reason === 'PolicyNotEnforceable' ? 'warn' : 'error';
      this.options.logger[log]('NetworkPolicy pass', { ...result });
      for (const listener of this.listeners) {
        try {
          listener(result);
        } catch (error) {
          this.options.logger.error('policy result listener failed', { error: String(error) });
        }
      }
    }
    return cause instanceof Error ? cause : new Error(result.message);
  }

  /** One Event per policy and problem (again only if the problem changes or comes back). */
  private warnAbout(problems: PolicyProblem[]): void {
    const current = new Set<string>();
    for (const p of problems) {
      const id = p.uid ?? `${p.namespace}/${p.name}`;
      current.add(id);
      if (this.warned.get(id) === p.message) continue;
      this.warned.set(id, p.message);
      this.options.warn?.(p);
    }
    for (const id of this.warned.keys()) if (!current.has(id)) this.warned.delete(id);
  }
}
