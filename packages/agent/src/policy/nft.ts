// Where the agent's nftables table goes: the namespace the agent runs in (production), or the
// node namespace given by --host-netns (the lab and the tests run the agent next to the API
// server and wire pods in a node namespace). @flock/netpol's runner enters a namespace by name.
import { NftApplier, nftRunner, type ApplyMode, type NftRun, type NftTable } from '@flock/netpol';

/**
 * What the reconciler needs of NftApplier: make a table the one in force (by a diff to the last
 * one when only elements or pod chains changed, else by a full replace; skipped when unchanged),
 * and forget the last one (the next apply is a full replace).
 */
export interface PolicyApplier {
  applyTable(table: NftTable): Promise<ApplyMode>;
  forget(): void;
}

const NAMED_NETNS = /^\/(?:var\/)?run\/netns\/([A-Za-z0-9][A-Za-z0-9_.-]{0,63})$/;

/** The `ip netns` name of a namespace path such as /run/netns/node-1a2b3c. */
export function netnsName(path: string): string {
  const match = NAMED_NETNS.exec(path);
  if (!match?.[1])
    throw new Error(
      `--host-netns ${JSON.stringify(path)}: NetworkPolicy needs a named namespace (/run/netns/NAME)`,
    );
  return match[1];
}

/** The real kernel edge: `nft -f -`, in the host namespace or `hostNetns`. */
export function policyNftRun(hostNetns: string | undefined): NftRun {
  return nftRunner(hostNetns === undefined ? {} : { netns: netnsName(hostNetns) });
}

export function nftPolicyApplier(hostNetns: string | undefined): NftApplier {
  return new NftApplier(policyNftRun(hostNetns));
}
