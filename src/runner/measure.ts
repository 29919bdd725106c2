// What a step of a chain cost: its wall time and the peak resident memory of the process while it
// ran. The kernel's high-water mark (VmHWM) is reset when the step starts (`5` into
// /proc/self/clear_refs, Linux 4.0+), so each step's peak is its own, not the chain's so far.
// Elsewhere (no procfs) the peak is left out.
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

function resetHighWater(): boolean {
  try {
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
