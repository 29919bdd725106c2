// Deterministic noise for the emulator: every "random" number is a hash of a seed and an index,
// so a seed and a clock always give the same data, in any request order, in any process.

/** A 32-bit integer hash of integers (a murmur3-style mix folded over the inputs; hot, so fixed arity). */
export function hashInts(a: number, b: number, c = 0): number {
  let h = mix(mix(mix(0x9e3779b9, a), b), c);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return h >>> 0;
}

function mix(h: number, value: number): number {
  h = Math.imul(h ^ (value | 0), 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  // Inputs beyond 32 bits fold in their high part, so large indices do not alias.
  const high = Math.floor(value / 4294967296);
  return high !== 0 ? Math.imul(h ^ high, 0x27d4eb2d) : h;
}

/** A 32-bit seed for a text (an id, a key hash): FNV-1a. */
export function hashText(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Uniform in [0, 1) from a hash of the inputs. */
export function uniform(a: number, b: number, c = 0): number {
  return hashInts(a, b, c) / 4294967296;
}

/** Roughly standard normal from a hash of the inputs (sum of four uniforms, rescaled). */
export function gaussian(a: number, b: number): number {
  const h1 = hashInts(a, b);
  const h2 = hashInts(h1, 0x68e31da4);
  const sum = (h1 & 0xffff) + (h1 >>> 16) + (h2 & 0xffff) + (h2 >>> 16);
  // Four uniforms on [0, 65536): mean 131070, standard deviation 65536 * sqrt(4/12).
  return (sum - 131070) / 37837.2;
}

/**
 * Smooth noise in time, about standard normal: knots every `periodMs` joined by a smoothstep,
 * plus a second octave at a third of the period. Seeded, so one seed gives one weather.
 */
export function smoothNoise(seed: number, timeMs: number, periodMs: number): number {
  return (knotNoise(seed, timeMs, periodMs) * 0.85 + knotNoise(seed ^ 0x5bd1e995, timeMs, periodMs / 3) * 0.45) * 1.3;
}

function knotNoise(seed: number, timeMs: number, periodMs: number): number {
  const position = timeMs / periodMs;
  const index = Math.floor(position);
  const f = position - index;
  const s = f * f * (3 - 2 * f);
  return gaussian(seed, index) * (1 - s) + gaussian(seed, index + 1) * s;
}
