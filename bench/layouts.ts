import { GPU_MODELS } from '../src/mig/catalog/index.js';
import { enumerateLayouts, placeProfiles } from '../src/mig/geometry.js';
import type { GiProfile, GpuModel } from '../src/mig/types.js';

/**
 * The obvious alternative to migpool's enumeration: every vector of counts up to each profile's
 * maximum, each checked by the placer. Kept only as the benchmark's point of comparison.
 */
function bruteForceLayoutCount(model: GpuModel): number {
  let count = 0;
  const chosen: GiProfile[] = [];
  const walk = (i: number): void => {
    const profile = model.giProfiles[i];
    if (!profile) {
      if (chosen.length > 0 && placeProfiles(model, chosen).valid) count++;
      return;
    }
    for (let n = 0; n <= profile.maxCount; n++) {
      for (let k = 0; k < n; k++) chosen.push(profile);
      walk(i + 1);
      for (let k = 0; k < n; k++) chosen.pop();
    }
  };
  walk(0);
  return count;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

/** Times enumerating every layout of every catalogued GPU, against the brute-force count. */
export function benchLayouts(): string[] {
  const lines: string[] = [];
  const runs = 15;
  const perGpu = new Map<string, { layouts: number; maximal: number; ms: number[] }>();
  const totals: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    for (const m of GPU_MODELS) {
      const s = performance.now();
      const all = enumerateLayouts(m);
      const maximal = enumerateLayouts(m, { maximal: true });
      const entry = perGpu.get(m.name) ?? { layouts: all.length, maximal: maximal.length, ms: [] };
      entry.ms.push(performance.now() - s);
      perGpu.set(m.name, entry);
    }
    totals.push(performance.now() - t0);
  }
  const bruteStart = performance.now();
  const bruteCounts = new Map(GPU_MODELS.map((m) => [m.name, bruteForceLayoutCount(m)]));
  const bruteMs = performance.now() - bruteStart;

  lines.push('layouts: enumerate every legal layout (all + maximal) of every catalogued GPU');
  lines.push(`  ${'GPU'.padEnd(16)} ${'layouts'.padStart(8)} ${'maximal'.padStart(8)} ${'brute'.padStart(8)} ${'median ms'.padStart(10)}`);
  for (const [name, e] of perGpu) {
    const brute = bruteCounts.get(name) ?? 0;
    const flag = brute === e.layouts ? '' : '  MISMATCH';
    lines.push(`  ${name.padEnd(16)} ${String(e.layouts).padStart(8)} ${String(e.maximal).padStart(8)} ${String(brute).padStart(8)} ${median(e.ms).toFixed(2).padStart(10)}${flag}`);
  }
  const total = median(totals);
  lines.push(`  all ${GPU_MODELS.length} GPUs: median ${total.toFixed(1)} ms over ${runs} runs (target: well under 100 ms) -> ${total < 100 ? 'PASS' : 'FAIL'}`);
  lines.push(`  compared with brute force over count vectors, same run: ${bruteMs.toFixed(1)} ms (${(bruteMs / total).toFixed(1)}x slower)`);
  return lines;
}
