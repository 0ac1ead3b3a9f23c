// A memory bench's child reports its own memory, one JSON line a step, to the parent that prints
// them (cache-memory.ts, fanout/relay-memory.ts): RSS and heap after a forced GC, the peak RSS.
const MiB = 1024 * 1024;

export interface Sample {
  step: string;
  rssMiB: number;
  heapMiB: number;
  /** Memory V8 tracks outside its heap (Buffers, zlib and TLS state Node reports). */
  externalMiB: number;
  peakRssMiB: number;
  seconds: number;
  objects?: number;
}

/** This process's memory after a forced GC, as one line of JSON on stdout for the parent. */
export function reporter(): (step: string, objects?: number) => void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  const t0 = performance.now();
  return (step, objects) => {
    gc();
    gc();
    const m = process.memoryUsage();
    const sample: Sample = {
      step,
      rssMiB: m.rss / MiB,
      heapMiB: m.heapUsed / MiB,
      externalMiB: m.external / MiB,
      peakRssMiB: process.resourceUsage().maxRSS / 1024,
      seconds: (performance.now() - t0) / 1000,
      ...(objects === undefined ? {} : { objects }),
    };
    console.log(JSON.stringify(sample));
  };
}

/** A sample as the parent prints it. */
export function sampleLine(s: Sample): string {
  const objects = s.objects === undefined ? '' : `${s.objects.toLocaleString('en-US')} objects, `;
  return (
    `  ${s.step.padEnd(40)} RSS ${s.rssMiB.toFixed(1).padStart(6)} MiB  ` +
    `heap ${s.heapMiB.toFixed(1).padStart(6)} MiB  external ${s.externalMiB.toFixed(1).padStart(5)} MiB  peak RSS ${s.peakRssMiB.toFixed(0).padStart(4)} MiB  ` +
    `(${objects}${s.seconds.toFixed(1)} s)`
  );
}
