// The real twin of the unit tests' recording nft: the agent's applier (NftApplier over nftRunner
// in the --host-netns namespace) and the reconciler's self-heal against a real kernel table.
import { silentLogger, type Logger } from '@flock/api';
import { NAMESPACES, PODS } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { Netns, requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostVethName } from '../datapath/index.js';
import { render, translate } from '@flock/netpol';
import { CachedPod } from '../node/pods.js';
import { PolicyNamespace, policyCaches } from './caches.js';
import { nftPolicyApplier } from './nft.js';
import { PolicyReconciler } from './reconciler.js';
import { buildPolicyState } from './state.js';
import {
  entry,
  namespace,
  networkPolicy,
  pod,
  startedPods,
  stopPods,
} from '../../testing/policy.js';
import { checkPolicy } from './validate.js';

let node: Netns;
const table = async () =>
  (await node.exec('nft', ['list', 'table', 'inet', 'flock'], { okCodes: [0, 1] })).stdout;

beforeAll(async () => {
  requireKernelTier('nft');
  node = await Netns.create('polnft');
});
afterAll(async () => {
  await node?.destroy();
});

describe('the agent nft applier in the node namespace', () => {
  it('applies into --host-netns, skips an unchanged script, and reports what nft refuses', async () => {
    const applier = nftPolicyApplier(node.path);
    const script = [
      'table inet flock {}',
      'delete table inet flock',
      'table inet flock {',
      '\tchain forward {',
      '\t\ttype filter hook forward priority filter; policy accept;',
      '\t}',
      '}',
      '',
    ].join('\n');
    expect(await applier.apply(script)).toBe(true);
    expect(await table()).toContain('chain forward');
    expect(await applier.apply(script)).toBe(false);
    await expect(applier.apply('table inet flock { chain forward { bogus } }')).rejects.toThrow(
      /bogus|syntax error/,
    );
    expect(await table()).toContain('chain forward'); // the failed transaction changed nothing
  });

  it('nft accepts the table of unknown pods, second sandboxes and a fail-closed stand-in', async () => {
    const values = Array.from({ length: 65 }, (_, i) => `v${i}`);
    const web = CachedPod.parse(pod('web', { app: 'web' }, []));
    const built = buildPolicyState({
      namespaces: [PolicyNamespace.parse(namespace('shop'))],
      pods: [],
      policies: [
        checkPolicy(
          networkPolicy('shop/too-big', {
            podSelector: { matchLabels: { app: 'web' } },
            egress: [
              {
                to: [{ podSelector: { matchExpressions: [{ key: 'a', operator: 'In', values }] } }],
              },
            ],
          }),
        )!,
      ],
      locals: [
        { entry: entry('web', '2001:db8:1::5'), pod: web },
        { entry: entry('web', '2001:db8:1::6', { containerID: 'ctr-old' }), pod: web },
        { entry: entry('gone', '2001:db8:1::7', { ip4: '192.0.2.7' }), pod: undefined },
      ],
    });
    expect(built.problems).toHaveLength(1);
    await nftPolicyApplier(node.path).apply(render(translate(built.state)));
    const listed = await table();
    for (const name of ['ctr-web', 'ctr-old', 'ctr-gone'])
      expect(listed).toContain(`"${hostVethName(name, 'eth0')}" : jump egress_`);
    expect(listed).toContain('flock:unknown-pods');
  });

  it('a pass after a pod change applies a diff; the self-heal pass puts back a deleted table', async () => {
    const api = new FakeApiServer();
    api.putObject(NAMESPACES, namespace('shop'));
    const uid = api.putObject(PODS, pod('web', { app: 'web' }, [])).metadata.uid;
    const uid2 = api.putObject(PODS, pod('api', { app: 'api' }, [])).metadata.uid;
    const logger: Logger = silentLogger;
    const entries = [entry('web', '2001:db8:1::5', { podUID: uid })];
    const applier = nftPolicyApplier(node.path);
    const reconciler = new PolicyReconciler({
      caches: policyCaches(api, startedPods(api), logger),
      store: { entries: () => entries },
      pods: { get: async () => undefined },
      applier,
      logger,
      resyncMs: 600_000,
    });
    try {
      reconciler.start();
      await reconciler.waitForSync(5_000);
      const veth = hostVethName('ctr-web', 'eth0');
      await reconciler.reconcile();
      expect(await table()).toContain(veth);
      // A second pod: only elements change, so the pass sends a diff, not the whole table.
      const before = applier.counts;
      entries.push(entry('api', '2001:db8:1::6', { podUID: uid2 }));
      await reconciler.reconcile();
      expect(await table()).toContain(`"${hostVethName('ctr-api', 'eth0')}" . 2001:db8:1::6`);
      expect(applier.counts.diff).toBe(before.diff + 1);
      expect(applier.counts.replace).toBe(before.replace);
      await node.exec('nft', ['delete', 'table', 'inet', 'flock']);
      await reconciler.reconcile(); // unchanged script: the applier does not notice
      expect(await table()).toBe('');
      await reconciler.resync();
      expect(await table()).toContain(veth);
    } finally {
      await reconciler.stop();
      await stopPods();
    }
  });
});
