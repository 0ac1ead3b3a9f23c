// Where the agent's nftables table goes: the namespace the agent runs in (production), or the
// node namespace given by --host-netns (the lab and the tests run the agent next to the API
// server and wire pods in a node namespace). @flock/netpol's runner enters a namespace by name.
import { NftApplier, nftRunner, type NftRun } from '@flock/netpol';

/** What the reconciler needs of NftApplier: apply a script (skipped when unchanged), forget it. */
export interface PolicyApplier {
  apply(script: string): Promise<boolean>;
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

export function nftPolicyApplier(hostNetns: string | undefined): PolicyApplier {
  return new NftApplier(policyNftRun(hostNetns));
}
