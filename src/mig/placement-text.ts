import type { Placement } from './types.js';

/**
 * Parses a placement list as `nvidia-smi mig -lgipp` prints it, `{0,2,4}:2`, into placements.
 * Returns null when the text is not of that form.
 */
export function parsePlacementList(text: string): Placement[] | null {
  const m = /^\{\s*(\d+(?:\s*,\s*\d+)*)\s*\}\s*:\s*(\d+)$/.exec(text.trim());
  if (!m) return null;
  const size = Number(m[2]);
  return (m[1] ?? '').split(',').map((s) => ({ start: Number(s.trim()), size }));
}

/** Formats placements of one size the way `nvidia-smi mig -lgipp` does: `{0,2,4}:2`. */
export function formatPlacementList(placements: readonly Placement[]): string {
  const bySize = new Map<number, number[]>();
  for (const p of placements) bySize.set(p.size, [...(bySize.get(p.size) ?? []), p.start]);
  return [...bySize].map(([size, starts]) => `{${starts.join(',')}}:${size}`).join(' ');
}
