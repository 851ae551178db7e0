/** How {@link durationText} writes a number of seconds. */
export interface DurationTextOptions {
  /**
   * The number whose size picks the unit, instead of the value's own (default): a spread written
   * in its mean's unit reads `2.50 h ± 0.10 h`, not `2.50 h ± 6.0 min`.
   */
  readonly unitOf?: number;
  /**
   * A rough wait said in a sentence ("expected to end in about 17 min"): `45 s` (at least `1 s`),
   * `17 min` (whole minutes), `2.5 h` (one decimal, no days). Default off: the figures of a table,
   * `45 s`, `12.3 min`, `2.50 h`, `3.10 d`.
   */
  readonly rough?: boolean;
}

/**
 * Seconds as people read them, in the largest unit that the value (or `unitOf`) reaches: `45 s`,
 * `12.3 min`, `2.50 h`, `3.10 d`; `-` for a number that is not finite. See
 * {@link DurationTextOptions} for the rough form of a wait.
 */
export function durationText(v: number, options: DurationTextOptions = {}): string {
  if (!Number.isFinite(v)) return '-';
  const a = Math.abs(options.unitOf ?? v);
  if (options.rough) {
    if (a >= 3600) return `${(v / 3600).toFixed(1)} h`;
    if (a >= 60) return `${Math.round(v / 60)} min`;
    return `${Math.max(1, Math.round(v))} s`;
  }
  if (a >= 86_400) return `${(v / 86_400).toFixed(2)} d`;
  if (a >= 3600) return `${(v / 3600).toFixed(2)} h`;
  if (a >= 60) return `${(v / 60).toFixed(1)} min`;
  return `${v.toFixed(0)} s`;
}
