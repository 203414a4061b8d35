/**
 * mulberry32, a seeded generator: small, fast and good enough for test data and for the engine's seeded search moves
 * (`engine/solving/hitting.ts`); the same seed gives the same numbers on every machine, so the same answer.
 */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
