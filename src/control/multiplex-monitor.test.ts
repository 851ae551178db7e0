import { describe, expect, it } from 'vitest';
import { nextThreadPercentage, SlowdownMonitor, type ClientView, type DeviceView } from './multiplex-monitor.js';

const opts = { bound: 1.1, windowMs: 1000, settleMs: 200 };

/** A job that did `rate` samples/s from `t0` with `samples0` samples: its report at `t`. */
const at = (samples0: number, t0: number, rate: number, t: number) => ({ samples: samples0 + Math.round(((t - t0) * rate) / 1000), updatedAt: t });

function device(clients: ClientView[]): DeviceView {
  return { key: 'GPU-a', gpu: 0, clients };
}

const fg = (progress: ClientView['progress'], modelAloneRate: number | null = null): ClientView => ({ id: 'f', attempt: 1, startedAt: 0, priority: 'foreground', progress, modelAloneRate });
/** A background neighbour that has reported since it started (at 0 ms). */
const bg = (id = 'b', attempt = 1): ClientView => ({ id, attempt, startedAt: 0, priority: 'background', progress: { samples: 1, updatedAt: 0 }, modelAloneRate: null });

describe('SlowdownMonitor', () => {
  it('measures the foreground alone, then beside a background job, and reports a slowdown beyond the bound once', () => {
    const m = new SlowdownMonitor(opts);
    let t = 0;
    for (; t <= 2000; t += 100) expect(m.observe(t, [device([fg(at(0, 0, 1000, t))])]).over).toEqual([]);
    const joined = t;
    const base = at(0, 0, 1000, joined).samples;
    const over = [];
    const measured = [];
    for (; t <= joined + 3000; t += 100) {
      const r = m.observe(t, [device([fg(at(base, joined, 500, t)), bg()])]);
      over.push(...r.over);
      measured.push(...r.measured);
    }
    expect(over).toHaveLength(1);
    expect(over[0]).toMatchObject({ foreground: 'f', background: ['b'], neighbours: ['b'], aloneFrom: 'measured', gpu: 0, device: 'GPU-a' });
    expect(over[0]!.alone).toBeCloseTo(1000, 0);
    expect(over[0]!.shared).toBeCloseTo(500, 0);
    expect(over[0]!.slowdown).toBeCloseTo(2, 2);
    // Only once the reports after the settling time span the window.
    expect(measured.length).toBeGreaterThan(10);
  });

  it('reports nothing while the foreground keeps within the bound', () => {
    const m = new SlowdownMonitor(opts);
    let t = 0;
    for (; t <= 2000; t += 100) m.observe(t, [device([fg(at(0, 0, 1000, t))])]);
    const joined = t;
    const base = at(0, 0, 1000, joined).samples;
    for (; t <= joined + 5000; t += 100) {
      const r = m.observe(t, [device([fg(at(base, joined, 950, t)), bg()])]);
      expect(r.over).toEqual([]);
      for (const s of r.measured) expect(s.slowdown).toBeLessThan(1.1);
    }
  });

  it('skips the settling time: a slow start of the neighbour is not counted', () => {
    const m = new SlowdownMonitor({ bound: 1.1, windowMs: 500, settleMs: 1000 });
    let t = 0;
    for (; t <= 2000; t += 100) m.observe(t, [device([fg(at(0, 0, 1000, t))])]);
    const joined = t;
    let samples = at(0, 0, 1000, joined).samples;
    const over = [];
    for (; t <= joined + 3000; t += 100) {
      // Half speed during the first second (the neighbour starting), full speed after.
      samples += t - joined <= 1000 ? 50 : 100;
      over.push(...m.observe(t, [device([fg({ samples, updatedAt: t }), bg()])]).over);
    }
    expect(over).toEqual([]);
  });

  it('counts a neighbour from its first report: nothing is measured while it starts, and its start-up is not in the measure', () => {
    const m = new SlowdownMonitor({ bound: 1.1, windowMs: 500, settleMs: 200 });
    let t = 0;
    for (; t <= 2000; t += 100) m.observe(t, [device([fg(at(0, 0, 1000, t))])]);
    const joined = t;
    let samples = at(0, 0, 1000, joined).samples;
    const over = [];
    const measured = [];
    for (; t <= joined + 4000; t += 100) {
      const reported = t - joined >= 2000;
      // Half speed while the neighbour starts (2 s, no report yet), then 0.95x: within the bound.
      samples += reported ? 95 : 50;
      const neighbour: ClientView = { id: 'b', attempt: 2, startedAt: joined, priority: 'background', progress: reported ? { samples: 10, updatedAt: t } : { samples: 900, updatedAt: joined - 500 }, modelAloneRate: null };
      const r = m.observe(t, [device([fg({ samples, updatedAt: t }), neighbour])]);
      over.push(...r.over);
      measured.push(...r.measured);
      if (!reported) expect(r.measured).toEqual([]);
    }
    expect(over).toEqual([]);
    expect(measured.length).toBeGreaterThan(5);
  });

  it('measures afresh when the neighbours change or one restarts, and may report again', () => {
    const m = new SlowdownMonitor(opts);
    let t = 0;
    for (; t <= 2000; t += 100) m.observe(t, [device([fg(at(0, 0, 1000, t))])]);
    let over = 0;
    for (const [id, attempt] of [['b1', 1], ['b1', 2], ['b2', 1]] as const) {
      const start = t;
      const base = at(0, 0, 1000, 2000).samples + (start - 2100) * 0.5;
      for (; t <= start + 2000; t += 100) over += m.observe(t, [device([fg({ samples: base + ((t - start) * 500) / 1000, updatedAt: t }), bg(id, attempt)])]).over.length;
    }
    expect(over).toBe(3);
  });

  it("uses the model's speed alone when the foreground was never measured alone, and nothing without one", () => {
    for (const model of [1000, null]) {
      const m = new SlowdownMonitor(opts);
      const over = [];
      for (let t = 0; t <= 3000; t += 100) over.push(...m.observe(t, [device([fg(at(0, 0, 500, t), model), bg()])]).over);
      if (model === null) expect(over).toEqual([]);
      else expect(over).toMatchObject([{ aloneFrom: 'model', alone: 1000 }]);
    }
  });

  it('never judges a foreground job beside foreground jobs only', () => {
    const m = new SlowdownMonitor(opts);
    for (let t = 0; t <= 3000; t += 100) {
      const other: ClientView = { id: 'g', attempt: 1, startedAt: 0, priority: 'foreground', progress: at(0, 0, 100, t), modelAloneRate: 1e6 };
      expect(m.observe(t, [device([fg(at(0, 0, 100, t), 1e6), other])]).over).toEqual([]);
    }
  });
});

describe('nextThreadPercentage', () => {
  it('halves from no limit (100) down to the floor, then stops', () => {
    const seq: (number | null)[] = [];
    let p: number | null = null;
    for (let i = 0; i < 5; i++) {
      p = nextThreadPercentage(p, 10);
      seq.push(p);
      if (p === null) break;
    }
    expect(seq).toEqual([50, 25, 12, null]);
  });
});
