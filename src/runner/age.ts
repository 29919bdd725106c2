// Ages as the operator reads them in a check's line, a probe's answer or an alert.

/** An age for a person: `45s`, `17m`, `5.2h`, `3.0d`. */
export function formatAge(ms: number): string {
  if (ms < 120_000) return `${Math.round(ms / 1000)}s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)}m`;
  if (ms < 172_800_000) return `${(ms / 3_600_000).toFixed(1)}h`;
  return `${(ms / 86_400_000).toFixed(1)}d`;
}
