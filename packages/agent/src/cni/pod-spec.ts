// An allocation as the datapath's pod spec, the datapath's setup as a CNI error that names
// its step, and the CNI result of a setup (ADD and CHECK share these).
import { CNI_VERSION, CniErrorCode, type CniResult } from '@flock/api';
import type { AllocationEntry } from '../store/index.js';
import { DatapathError, hostVethName, type Datapath, type PodSpec } from '../datapath/index.js';
import { CniCommandError } from '../core/cni-error.js';

export type PodSetup = Awaited<ReturnType<Datapath['setupPod']>>;

export function podSpec(entry: AllocationEntry, netns: string): PodSpec {
  return {
    containerID: entry.containerID,
    ifName: entry.ifname,
    netns,
    hostVeth: hostVethName(entry.containerID, entry.ifname),
    ip6: entry.ip6,
    ...(entry.ip4 ? { ip4: entry.ip4 } : {}),
    anycast: entry.anycast,
  };
}

export async function setupPod(
  datapath: Datapath,
  entry: AllocationEntry,
  netns: string,
): Promise<PodSetup> {
  try {
    return await datapath.setupPod(podSpec(entry, netns));
  } catch (error) {
    const step = error instanceof DatapathError ? error.step : 'datapath';
    throw new CniCommandError(
      CniErrorCode.SetupFailed,
      `ADD failed at step ${step}: ${(error as Error).message}`,
    );
  }
}

export function cniResult(setup: PodSetup): CniResult {
  return {
    cniVersion: CNI_VERSION,
    interfaces: setup.interfaces,
    ips: setup.ips,
    routes: setup.routes,
  };
}
