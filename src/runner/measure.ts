// What a step of a chain cost: its wall time and the peak resident memory of the process while it
// ran. The kernel's high-water mark (VmHWM) is reset when the step starts (`5` into
// /proc/self/clear_refs, Linux 4.0+), so each step's peak is its own, not the chain's so far.
// The reset also resets what the kernel reports to the parent at exit (ru_maxrss: `/usr/bin/time`'s
// maximum resident set size is then the last step's), so the mark is read before each reset and
// the process's own peak (processPeakRssMb) is the larger of those and the mark. Elsewhere (no
// procfs) the peaks are left out.
import { readFileSync, writeFileSync } from 'node:fs';

export interface StepCost {
  seconds: number;
  /** Peak RSS in MB while the step ran; null where the kernel does not tell. */
  peakRssMb: number | null;
}

/** Starts measuring a step; the returned function ends it. */
export function measureStep(): () => StepCost {
  const reset = resetHighWater();
  const t0 = performance.now();
  return () => ({
    seconds: (performance.now() - t0) / 1000,
    peakRssMb: reset ? highWaterMb() : null,
  });
}

/** `(12.3 s, peak RSS 210 MB)`: the suffix of a step's summary line. */
export function describeCost(cost: StepCost): string {
  const rss = cost.peakRssMb === null ? '' : `, peak RSS ${Math.round(cost.peakRssMb)} MB`;
  return `(${cost.seconds.toFixed(2)} s${rss})`;
}

/** The kernel's mark when it was last reset, in MB: the process's peak up to then. */
let peakBeforeResetMb = 0;

/** The process's peak RSS in MB since it started, whatever the steps reset; null where the kernel does not tell. */
export function processPeakRssMb(): number | null {
  const mark = highWaterMb();
  return mark === null ? null : Math.max(peakBeforeResetMb, mark);
}

function resetHighWater(): boolean {
  try {
    peakBeforeResetMb = Math.max(peakBeforeResetMb, highWaterMb() ?? 0);
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

function highWaterMb(): number | null {
  try {
    const kb = /VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return kb === undefined ? null : Number(kb) / 1024;
  } catch {
    return null;
  }
}
