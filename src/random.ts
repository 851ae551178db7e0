/**
 * A small seeded pseudo-random source (mulberry32): the same seed always gives the same sequence.
 * The simulator and the service hand it to policies as `ctx.random`; nothing in src/sim or src/sched
 * uses Math.random. Here, beneath every layer, so that both clocks share it.
 */
export function createRandom(seed: number): () => number {
  let state = (Math.trunc(seed) ^ 0x9e3779b9) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
