import { badInput } from '../errors.js';
import { MIGPOOL_COST } from './cost.js';
import { DEEPPOOL_COST } from './deeppool-cost.js';
import type { CostModel, CostModelName } from './types.js';

/**
 * The cost models a plan can be priced with:
 * - `migpool` (default): every parameter's gradient ring-all-reduced, activations at their
 *   profiled width (cost.ts);
 * - `deeppool`: DeepPool's own accounting, to compare planners under the same assumptions
 *   (deeppool-cost.ts).
 */
export const COST_MODELS: Readonly<Record<CostModelName, CostModel>> = { migpool: MIGPOOL_COST, deeppool: DEEPPOOL_COST };

/** The cost model of a name; BAD_INPUT naming the known ones otherwise. */
export function resolveCostModel(name: string | undefined): CostModel {
  if (name === undefined) return MIGPOOL_COST;
  const m = (COST_MODELS as Record<string, CostModel | undefined>)[name];
  if (!m) throw badInput(`unknown cost model '${name}': known are ${Object.keys(COST_MODELS).join(', ')}`);
  return m;
}
