// A process's memory as the kernel counts it: resident set now (VmRSS) and its peak (VmHWM).
import { readFile } from 'node:fs/promises';

export interface Rss {
  rssMiB: number;
  peakMiB: number;
}

export async function readRss(pid: number): Promise<Rss> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status);
    if (!m) throw new Error(`/proc/${pid}/status has no ${field}`);
    return Number(m[1]) / 1024;
  };
  return { rssMiB: kib('VmRSS'), peakMiB: kib('VmHWM') };
}
