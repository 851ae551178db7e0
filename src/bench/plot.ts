import { createRequire } from 'node:module';

// ECharts ships ESM without a default export but declares `export =` types; load its CommonJS
// build so that types and runtime agree.
/** echarts, loaded on first use (it takes a few hundred ms to import: not at every command's start). */
let echartsModule: typeof import('echarts') | null = null;
const loadEcharts = (): typeof import('echarts') => (echartsModule ??= createRequire(import.meta.url)('echarts') as typeof import('echarts'));

/** One config's result as the plot shows it. */
export interface PlotRow {
  readonly name: string;
  readonly fits: boolean | 'unknown';
  readonly epochSeconds: number | null;
  readonly speedup: number | null;
}

/**
 * Draws a bench result as an SVG a person can read at a glance: time per epoch of each job (top)
 * and aggregate speedup over `1xfull` (bottom), one bar per config; configs that do not fit are
 * labelled instead of drawn. Rendered server-side by ECharts, no browser needed.
 */
export function benchPlotSvg(title: string, rows: readonly PlotRow[]): string {
  const chart = loadEcharts().init(null, null, { renderer: 'svg', ssr: true, width: Math.max(640, 90 * rows.length + 160), height: 620 });
  const names = rows.map((r) => (r.fits === false ? `${r.name}\n(does not fit)` : r.fits === 'unknown' ? `${r.name}\n(fit unknown)` : r.name));
  const round = (v: number | null, digits: number) => (v === null ? null : Number(v.toFixed(digits)));
  chart.setOption({
    animation: false,
    title: { text: title, left: 'center', textStyle: { fontSize: 15 } },
    grid: [
      { left: 70, right: 30, top: 60, height: 200 },
      { left: 70, right: 30, top: 350, height: 200 },
    ],
    xAxis: [
      { type: 'category', data: names, gridIndex: 0, axisLabel: { interval: 0, fontSize: 11 } },
      { type: 'category', data: names, gridIndex: 1, axisLabel: { interval: 0, fontSize: 11 } },
    ],
    yAxis: [
      { type: 'value', name: 'time per epoch, each job (s)', gridIndex: 0, nameTextStyle: { align: 'left' } },
      { type: 'value', name: 'speedup vs 1xfull (aggregate samples/s)', gridIndex: 1, nameTextStyle: { align: 'left' } },
    ],
    series: [
      {
        type: 'bar',
        xAxisIndex: 0,
        yAxisIndex: 0,
        data: rows.map((r) => round(r.epochSeconds, 1)),
        itemStyle: { color: '#5470c6' },
        label: { show: true, position: 'top', fontSize: 10 },
      },
      {
        type: 'bar',
        xAxisIndex: 1,
        yAxisIndex: 1,
        data: rows.map((r) => round(r.speedup, 2)),
        itemStyle: { color: '#91cc75' },
        label: { show: true, position: 'top', fontSize: 10, formatter: '{c}x' },
        markLine: { silent: true, symbol: 'none', data: [{ yAxis: 1 }], lineStyle: { color: '#888', type: 'dashed' }, label: { formatter: '1x' } },
      },
    ],
  });
  const svg = chart.renderToSVGString();
  chart.dispose();
  return svg;
}
