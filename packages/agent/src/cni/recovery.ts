// Start-up recovery of the attachments a previous run left: load the store, give the node's
// allocator back every committed address (and the quarantine of those released before the
// restart), and tear down every pending entry — an ADD or DEL that a crash cut short; its
// kernel state, if any, goes with it. Runs once the NodeConfig is known (the allocator is its)
// and before the CNI socket opens.
import type { Logger } from '@flock/api';
import type { AddressAllocator } from '@flock/ipam';
import type { Component } from '../core/lifecycle.js';
import type { NodeConfigTracker } from '../node/node-config.js';
import { entryKey, type AllocationEntry, type AllocationStore } from '../store/index.js';
import type { CniHandlers } from './handlers.js';

interface RecoveryOptions {
  store: AllocationStore;
  nodeConfig: Pick<NodeConfigTracker, 'current'>;
  handlers: Pick<CniHandlers, 'undo'>;
  logger: Logger;
}

export class AttachmentRecovery implements Component {
  readonly name = 'load the allocation store, drop pending leftovers of a previous run';

  constructor(private readonly options: RecoveryOptions) {}

  async start(): Promise<void> {
    const { store, logger } = this.options;
    const node = this.options.nodeConfig.current();
    if (!node) throw new Error('the NodeConfig of this node went away during start-up');
    await store.load();
    if (store.previousGenerationError) logger.warn(store.previousGenerationError);
    const entries = store.entries();
    for (const e of entries.filter((x) => x.state === 'committed'))
      remark(node.allocator, e, logger);
    // Released before the restart: still quarantined for the rest of their time.
    let restored = 0;
    for (const r of store.released()) if (node.allocator.restoreReleased(r)) restored++;
    if (restored) logger.info('released addresses still quarantined', { count: restored });
    const pending = entries.filter((x) => x.state === 'pending');
    if (pending.length) logger.info('dropping pending leftovers', { count: pending.length });
    for (const e of pending) await this.options.handlers.undo(e);
  }
}

/** Re-mark a committed allocation in IPAM after a restart; a conflict is logged, not fatal. */
function remark(allocator: AddressAllocator, e: AllocationEntry, logger: Logger): void {
  const r = allocator.markAllocated({
    owner: entryKey(e.containerID, e.ifname),
    namespace: e.namespace,
    name: e.pod,
    ip6: e.ip6,
    ...(e.ip4 ? { ip4: e.ip4 } : {}),
    pinned: e.pinned,
  });
  if (!r.ok)
    logger.error('committed allocation does not fit this node any more', {
      containerID: e.containerID,
      error: r.error.message,
    });
}
