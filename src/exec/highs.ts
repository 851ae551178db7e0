/**
 * Loads HiGHS (the `highs` package: the HiGHS LP/MIP solver compiled to WebAssembly). Loading
 * reads the wasm binary, so it lives here at the edge; src/optimize takes the loaded runtime.
 */
import * as highsModule from 'highs';
import type { Highs } from 'highs';

type Loader = () => Promise<Highs>;

let loading: Promise<Highs> | null = null;

/** The HiGHS runtime, instantiated once per process. */
export function loadHighs(): Promise<Highs> {
  if (!loading) {
    // Node loads the package's ESM build, whose default export is the loader; TypeScript reads its
    // CommonJS typings, under which the loader sits one `.default` deeper.
    const d = (highsModule as unknown as { default: Loader | { default: Loader } }).default;
    const load: Loader = typeof d === 'function' ? d : d.default;
    loading = load();
  }
  return loading;
}

