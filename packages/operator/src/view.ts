// What a reconcile reads: the three caches, with the operator's own recent writes laid over
// them (read-your-writes), and a fresh list on becoming leader so that a new leader never
// plans on a view older than what the previous leader wrote.
import { NodeConfig, Pool } from '@flock/api';
import type { Cache } from '@flock/kube';
import {
  errorMessage,
  NODECONFIGS,
  POOLS,
  resourceListWatch,
  type KubeTransport,
  type Logger,
} from '@flock/kube';
import type { Node } from './nodes.js';
import { olderThan, RecentWrites } from './recent-writes.js';

export class ClusterView {
  readonly poolWrites = new RecentWrites<Pool>();
  readonly configWrites = new RecentWrites<NodeConfig>();
  private readonly unsubscribe: Array<() => void>;

  constructor(
    readonly pools: Cache<Pool>,
    readonly nodes: Cache<Node>,
    readonly configs: Cache<NodeConfig>,
  ) {
    // For as long as the process runs (leading or not): the cache catching up ends an overlay.
    const observe = <T extends Pool | NodeConfig>(writes: RecentWrites<T>) => ({
      onAdd: (o: T) => writes.observe(o),
      onUpdate: (_: T, o: T) => writes.observe(o),
      onDelete: (o: T) => writes.observe(o),
    });
    this.unsubscribe = [
      pools.addHandler(observe(this.poolWrites), { replay: false }),
      configs.addHandler(observe(this.configWrites), { replay: false }),
    ];
  }

  get synced(): Promise<unknown> {
    return Promise.all([this.pools.synced, this.nodes.synced, this.configs.synced]);
  }

  get hasSynced(): boolean {
    return this.pools.hasSynced && this.nodes.hasSynced && this.configs.hasSynced;
  }

  pool(name: string): Pool | undefined {
    return this.poolWrites.get(name, this.pools.getObject(name));
  }

  config(name: string): NodeConfig | undefined {
    return this.configWrites.get(name, this.configs.getObject(name));
  }

  allPools(): Pool[] {
    return this.poolWrites.overlay(this.pools.list());
  }

  allNodes(): Node[] {
    return this.nodes.list();
  }

  allConfigs(): NodeConfig[] {
    return this.configWrites.overlay(this.configs.list());
  }

  poolNames(): string[] {
    return this.allPools().map((p) => p.metadata.name);
  }

  /**
   * List Pools and NodeConfigs straight from the API server and keep whatever is newer than
   * the caches (a new leader's watches may still lag behind the previous leader's writes).
   */
  async refresh(transport: KubeTransport, logger: Logger, signal: AbortSignal): Promise<void> {
    const fresh = async <T extends Pool | NodeConfig>(
      source: ReturnType<typeof resourceListWatch>,
      schema: typeof Pool | typeof NodeConfig,
      cache: Cache<T>,
      writes: RecentWrites<T>,
    ) => {
      let token: string | undefined;
      let newer = 0;
      do {
        const page = await source.list({
          limit: 500,
          ...(token ? { continue: token } : {}),
          signal,
        });
        for (const item of page.items) {
          const parsed = schema.safeParse(item);
          if (!parsed.success) continue;
          const obj = parsed.data as T;
          const cached = cache.getObject(obj.metadata.name);
          if (!cached || olderThan(cached.metadata.resourceVersion, obj.metadata.resourceVersion)) {
            writes.record(obj);
            newer++;
          }
        }
        token = page.continue;
      } while (token);
      return newer;
    };
    try {
      const pools = await fresh(
        resourceListWatch(transport, POOLS),
        Pool,
        this.pools,
        this.poolWrites,
      );
      const configs = await fresh(
        resourceListWatch(transport, NODECONFIGS),
        NodeConfig,
        this.configs,
        this.configWrites,
      );
      logger.info('fresh view taken', { newerPools: pools, newerNodeConfigs: configs });
    } catch (err) {
      logger.warn('fresh list of pools and nodeconfigs failed', { err: errorMessage(err) });
      throw err;
    }
  }

  close(): void {
    for (const off of this.unsubscribe) off();
  }
}
