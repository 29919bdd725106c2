// Every random choice of the tests (the kill times of the crash suite, the fast tier's sample of
// crash points and commands) comes from one seed per test run, so that a failure can be replayed:
// vitest's globalSetup picks it, unless EFSYNC_SEED gives it, and prints it; the test workers
// and their children inherit it. Each use draws from its own stream (seeded with the seed and a
// label), so what one test draws does not depend on which others ran.

/** The run's seed, set before any test file loads. */
export const SEED = Number(process.env.EFSYNC_SEED);

/** mulberry32: a small, well-mixed 32-bit generator; numbers in [0, 1). */
function mulberry32(state: number): () => number {
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** The random numbers of one use, `label` naming it. */
export function random(label: string): () => number {
  let hash = SEED;
  for (const char of label) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193);
  return mulberry32(hash);
}

/** `count` of `items`, drawn without replacement in their own order, from the stream `label`. */
export function sample<T>(items: readonly T[], count: number, label: string): T[] {
  const next = random(label);
  return items
    .map((item, index) => ({ item, index, key: next() }))
    .sort((a, b) => a.key - b.key)
    .slice(0, count)
    .sort((a, b) => a.index - b.index)
    .map(({ item }) => item);
}

export default function setup(): void {
  const given = process.env.EFSYNC_SEED;
  if (given !== undefined && !/^\d+$/.test(given)) throw new Error(`EFSYNC_SEED: a whole number, not "${given}"`);
  process.env.EFSYNC_SEED = given ?? String(Math.floor(Math.random() * 2 ** 31));
  console.log(`random choices from EFSYNC_SEED=${process.env.EFSYNC_SEED} (set it to replay them)`);
}
