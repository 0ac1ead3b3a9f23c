// A process's memory as the kernel counts it: resident set now (VmRSS) and its peak (VmHWM),
// and with its child processes (the agent's spawn server): their resident sets added up (pages
// they share, such as the node binary's, counted twice), and what a container holding them is
// charged, about: the process's resident set plus its children's private pages (the pages a
// child shares are the same node binary and libraries the process has resident already).
import { readFile } from 'node:fs/promises';
import { processTree } from '../proc-cpu.js';

export interface Rss {
  rssMiB: number;
  peakMiB: number;
  /** This process and its descendants: VmRSS summed. */
  treeRssMiB: number;
  /** This process's VmRSS plus its descendants' private pages (Private_Clean + Private_Dirty). */
  treeChargeMiB: number;
  /** How many processes the tree has. */
  processes: number;
}

const kibField = (text: string, field: string, where: string) => {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(text);
  if (!m) throw new Error(`${where} has no ${field}`);
  return Number(m[1]) / 1024;
};

export async function readRss(pid: number): Promise<Rss> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const where = `/proc/${pid}/status`;
  let treeRssMiB = 0;
  let treeChargeMiB = 0;
  const pids = await processTree(pid);
  for (const p of pids) {
    // A child may exit between the listing and the read (an ip process): count what is left.
    const s = await readFile(`/proc/${p}/status`, 'utf8').catch(() => undefined);
    const smaps = await readFile(`/proc/${p}/smaps_rollup`, 'utf8').catch(() => undefined);
    if (!s || !smaps) continue;
    const rss = kibField(s, 'VmRSS', `/proc/${p}/status`);
    treeRssMiB += rss;
    treeChargeMiB +=
      p === pid
        ? rss
        : kibField(smaps, 'Private_Clean', `/proc/${p}/smaps_rollup`) +
          kibField(smaps, 'Private_Dirty', `/proc/${p}/smaps_rollup`);
  }
  return {
    rssMiB: kibField(status, 'VmRSS', where),
    peakMiB: kibField(status, 'VmHWM', where),
    treeRssMiB,
    treeChargeMiB,
    processes: pids.length,
  };
}
