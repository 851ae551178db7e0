import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { GPU_MODELS, resolveGpuModel } from '../mig/catalog/index.js';
import { calibratedModel, misoPoints } from './calibrated.js';
import { gpuWorkTime, iterationTime } from './curve.js';
import { predict, predictPacked } from './model.js';
import { fitReport } from './report.js';
import { effectiveCapacity, resourceShape } from './resources.js';
import { parseWorkloadYaml, workloadFromPoints, workloadToYaml } from './user-workload.js';
import { builtInWorkloads, resolveWorkload } from './workloads.js';

const A100 = resolveGpuModel('A100-SXM4-40GB');
const H100 = resolveGpuModel('H100-80GB');
const aggregate = (name: string, profile: string | null, jobs: number): number =>
  predictPacked(resolveWorkload(name), A100, { profile }, jobs).aggregateSamplesPerSecond ?? NaN;

describe('fit quality (numbers a user relies on; measured values in comments)', () => {
  const report = new Map(fitReport().map((r) => [r.id, r]));
  const get = (id: string) => {
    const r = report.get(id);
    if (!r) throw new Error(id);
    return r;
  };

  it('MISO ResNet-50/CIFAR-10 within 4% on average and 8% at worst, 7% on held-out profiles', () => {
    const r = get('miso/resnet'); // 2.6% / 5.8%, leave-one-profile-out 4.8% / 15.6%
    expect(r.calibration.mean).toBeLessThan(0.04);
    expect(r.calibration.max).toBeLessThan(0.08);
    expect(r.leaveOut.mean).toBeLessThan(0.07);
    expect(r.leaveOut.max).toBeLessThan(0.2);
  });

  it('compute-bound MISO models (BERT, Transformer) within 3% on average, 5% held out', () => {
    for (const id of ['miso/bert', 'miso/transformer']) {
      expect(get(id).calibration.mean).toBeLessThan(0.03);
      expect(get(id).leaveOut.mean).toBeLessThan(0.05);
    }
  });

  it('every model but deepspeech2 within 12% on average; DeepPool VGG16 and WRN-101-2 within 3%', () => {
    for (const r of fitReport()) if (r.id !== 'miso/deepspeech2') expect(r.calibration.mean, r.id).toBeLessThan(0.12);
    expect(get('deeppool/vgg16').calibration.mean).toBeLessThan(0.03);
    expect(get('deeppool/wrn101-2').calibration.mean).toBeLessThan(0.03);
    expect(get('miso/deepspeech2').notes.join(' ')).toMatch(/noisy/);
  });

  it('batch equivalence holds within 5% for ResNet-50 batch 128 on 2g and larger', () => {
    const cal = calibratedModel('miso/resnet');
    for (const p of misoPoints('resnet', cal.curve.memoryBoundShare).filter((q) => q.batch === 128 && q.profile !== '1g.5gb')) {
      expect(Math.abs(iterationTime(cal.curve, p.batch, p.capacity) / p.iterationMs - 1), p.profile).toBeLessThan(0.05);
    }
  });

  it('is deterministic', () => {
    const again = workloadFromPoints('r', 128, 50_000, misoPoints('resnet', 0.5).map((p) => ({ capacity: p.capacity, batchSize: p.batch, iterationMs: p.iterationMs })));
    expect(again.curve).toEqual(calibratedModel('miso/resnet').curve);
  });
});

describe("the study's findings on an A100-40GB", () => {
  it('seven small jobs on 7x1g.5gb do about 3x (2.5..4.5x) the work of one on the whole GPU', () => {
    const speedup = aggregate('small', '1g.5gb', 7) / aggregate('small', null, 1); // 4.1x with the half-work proxy
    expect(speedup).toBeGreaterThan(2.5);
    expect(speedup).toBeLessThan(4.5);
  });

  it('the large job (ResNet-152, batch 128, fp32: about 24 GiB) fits no slice smaller than 7g.40gb', () => {
    for (const profile of ['1g.5gb', '2g.10gb', '3g.20gb', '4g.20gb']) {
      expect(predict(resolveWorkload('large'), { kind: 'mig', gpu: A100, profile }).memoryFit, profile).toBe(false);
    }
    expect(predict(resolveWorkload('large'), { kind: 'mig', gpu: A100, profile: '7g.40gb' }).memoryFit).toBe(true);
  });

  it('7g.40gb (98 SMs) is slower than the whole GPU with MIG off (108 SMs), by at most the SM ratio', () => {
    for (const w of ['deeppool-vgg16-b128', 'large', 'small']) {
      const full = predict(resolveWorkload(w), { kind: 'full', gpu: A100 }).iterationMs ?? NaN;
      const seven = predict(resolveWorkload(w), { kind: 'mig', gpu: A100, profile: '7g.40gb' }).iterationMs ?? NaN;
      expect(seven / full, w).toBeGreaterThan(1);
      expect(seven / full, w).toBeLessThanOrEqual(108 / 98 + 1e-9);
    }
  });

  it('bert-base-squad (PyTorch, 384 tokens, batch 8) fits an A30 1g.6gb, as NVIDIA ran four side by side, but not an A100 1g.5gb', () => {
    const bert = resolveWorkload('bert-base-squad');
    const p = predict(bert, { kind: 'mig', gpu: A100, profile: '1g.5gb' });
    expect(p).toMatchObject({ fits: false, memoryFit: false, iterationMs: null, samplesPerSecond: null, epochSeconds: null });
    expect(predict(bert, { kind: 'mig', gpu: A100, profile: '2g.10gb' }).memoryFit).toBe(true);
    expect(predict(bert, { kind: 'mig', gpu: resolveGpuModel('A30'), profile: '1g.6gb' }).memoryFit).toBe(true);
  });
});

describe('predictions', () => {
  const plain = (gpu: typeof A100) => gpu.giProfiles.filter((p) => !/[+-]/.test(p.name));

  it('are monotone in slice size on every GPU: more compute slices, no slower', () => {
    for (const gpu of GPU_MODELS) {
      const profiles = plain(gpu).slice().sort((a, b) => a.computeSlices - b.computeSlices || a.memorySlices - b.memorySlices);
      for (const w of builtInWorkloads()) {
        const times = profiles.map((p) => iterationTime(w.curve, w.batchSize, effectiveCapacity(resourceShape(gpu, p.name), w.curve.memoryBoundShare)));
        for (let i = 1; i < times.length; i++) expect(times[i], `${gpu.name} ${w.name}`).toBeLessThanOrEqual((times[i - 1] ?? Infinity) * (1 + 1e-9));
      }
    }
  });

  it('an H100 runs the same slice faster than an A100', () => {
    for (const w of ['small', 'medium', 'large', 'miso-transformer-b32']) {
      for (const [a, h] of [['1g.5gb', '1g.10gb'], ['3g.20gb', '3g.40gb'], ['7g.40gb', '7g.80gb']] as const) {
        const c = resolveWorkload(w).curve;
        const ta = iterationTime(c, resolveWorkload(w).batchSize, effectiveCapacity(resourceShape(A100, a), c.memoryBoundShare));
        const th = iterationTime(c, resolveWorkload(w).batchSize, effectiveCapacity(resourceShape(H100, h), c.memoryBoundShare));
        expect(th, `${w} ${h}`).toBeLessThan(ta);
      }
    }
  });

  it('time-slicing gains only by overlapping host time: each job no faster than alone, all together no more GPU work than the GPU does', () => {
    for (const gpu of [A100, H100]) {
      for (const w of builtInWorkloads()) {
        const capacity = effectiveCapacity(resourceShape(gpu, null), w.curve.memoryBoundShare);
        const alone = iterationTime(w.curve, w.batchSize, capacity);
        for (let jobs = 1; jobs <= 7; jobs++) {
          const p = predict({ ...w, memoryGiB: null }, { kind: 'timeslice', gpu, jobs });
          expect(p.iterationMs ?? 0).toBeGreaterThan(alone);
          expect(p.iterationMs ?? 0).toBeGreaterThan(jobs * gpuWorkTime(w.curve, w.batchSize, capacity));
        }
        // A latency-bound job (small) gains from company.
        if (w.name === 'resnet26-cifar10' && gpu === A100) expect(predictPacked(w, gpu, { sharing: 'timeslice' }, 2).aggregateSamplesPerSecond ?? 0).toBeGreaterThan(predict(w, { kind: 'full', gpu }).samplesPerSecond ?? 0);
      }
    }
  });

  it('a measured NxMPS or NxTIMESLICE point in the workload replaces the model for that N on that GPU', () => {
    const w = { ...resolveWorkload('small'), sharing: [{ gpu: A100.name, kind: 'mps' as const, jobs: 4, iterationMs: 123 }] };
    expect(predict(w, { kind: 'mps', gpu: A100, jobs: 4 }).iterationMs).toBe(123);
    expect(predict(w, { kind: 'mps', gpu: A100, jobs: 3 }).iterationMs).not.toBe(123);
    expect(predict(w, { kind: 'timeslice', gpu: A100, jobs: 4 }).iterationMs).not.toBe(123);
  });

  it('one job under MPS runs as on the whole GPU (no contention alone)', () => {
    const w = resolveWorkload('small');
    expect(predict(w, { kind: 'mps', gpu: A100, jobs: 1 }).iterationMs).toBeCloseTo(predict(w, { kind: 'full', gpu: A100 }).iterationMs ?? 0, 9);
  });

  it('an H100 SM trains faster than an A100 SM (datasheet dense FP16 per SM), a Hopper slice faster than the Ampere one', () => {
    expect(resourceShape(H100, '1g.10gb').smSpeed).toBeCloseTo(989.4 / 132 / (312 / 108), 6);
    expect(resourceShape(A100, '1g.5gb').smSpeed).toBe(1);
    const w = resolveWorkload('bert-base-squad');
    const a = predict(w, { kind: 'full', gpu: A100 }).iterationMs ?? 0;
    const h = predict(w, { kind: 'full', gpu: H100 }).iterationMs ?? 0;
    // SMs 132/108 and bandwidth 3350/1555 alone give about 1.6x; the per-SM factor lifts it to about 2.6x.
    expect(a / h).toBeGreaterThan(2);
  });

  it('shared GPUs need room for all jobs at once', () => {
    const bert = resolveWorkload('bert-base-squad'); // ~5.75 GiB each
    expect(predict(bert, { kind: 'mps', gpu: A100, jobs: 6 }).fits).toBe(true);
    expect(predict(bert, { kind: 'mps', gpu: A100, jobs: 7 }).fits).toBe(false);
    expect(() => predict(bert, { kind: 'timeslice', gpu: A100, jobs: 0 })).toThrow(MigpoolError);
  });

  it('flag estimates: unknown SMs and memory, unconfirmed bandwidth', () => {
    const b200 = resolveGpuModel('B200-180GB');
    const p = predict(resolveWorkload('small'), { kind: 'mig', gpu: b200, profile: '3g.90gb' });
    expect(p.fits).toBe(true);
    expect(p.caveats.join('\n')).toMatch(/SMs unknown[\s\S]*memory unknown/);
    const vit = predict(resolveWorkload('deeppool-vit-b128'), { kind: 'full', gpu: A100 });
    expect(vit.caveats.join()).toMatch(/memory need unknown/);
    expect(vit.memoryFit).toBe('unknown');
    expect(predict(resolveWorkload('small'), { kind: 'full', gpu: resolveGpuModel('A30') }).caveats.join()).toMatch(/unconfirmed/);
  });
});

describe('workloads', () => {
  it('resolve by name or alias, case-insensitive', () => {
    expect(resolveWorkload('SMALL').name).toBe('resnet26-cifar10');
    expect(resolveWorkload('Medium').name).toBe('resnet50-imagenet64');
    expect(resolveWorkload('large').name).toBe('resnet152-imagenet');
    expect(resolveWorkload('miso/ResNet-b128').name).toBe('miso-resnet-b128');
    expect(resolveWorkload('deeppool-wrn101-2-b32').batchSize).toBe(32);
  });

  it('unknown names are bad input listing the known ones', () => {
    try {
      resolveWorkload('resnet9000');
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(MigpoolError);
      expect((e as MigpoolError).code).toBe('BAD_INPUT');
      expect((e as Error).message).toMatch(/resnet26-cifar10 \(small\).*miso-bert-b8.*deeppool-vit-b128/);
    }
  });

  it('every MISO model at each measured batch and every DeepPool model at 128 and 32', () => {
    const names = builtInWorkloads().map((w) => w.name);
    expect(names.filter((n) => n.startsWith('miso-'))).toHaveLength(31);
    expect(names.filter((n) => n.startsWith('deeppool-'))).toHaveLength(10);
    expect(new Set(names).size).toBe(names.length);
    for (const w of builtInWorkloads()) expect(w.source.length, w.name).toBeGreaterThan(20);
  });

  it('memory is the smallest instance a MISO model ran on, interpolated in batch', () => {
    expect(resolveWorkload('miso-bert-b2').memoryGiB).toBe(9.75);
    expect(resolveWorkload('miso-bert-b8').memoryGiB).toBe(19.62);
    expect(resolveWorkload('miso-resnet-b512').memoryGiB).toBe(4.75);
    expect(resolveWorkload('miso-gnn-b512').memoryGiB).toBe(9.75);
  });
});

describe('user workloads', () => {
  const yaml = [
    'name: my-resnet',
    'batchSize: 128',
    'datasetSize: 50000',
    'memoryGiB: 4.75',
    'points:',
    '  - { gpu: A100-SXM4-40GB, profile: 1g.5gb, iterationMs: 64.8 }',
    '  - { gpu: A100-SXM4-40GB, profile: 2g.10gb, iterationMs: 38.2 }',
    '  - { gpu: A100-SXM4-40GB, profile: 3g.20gb, iterationMs: 31.7 }',
    '  - { gpu: A100-SXM4-40GB, profile: 7g.40gb, iterationMs: 29.6 }',
    '',
  ].join('\n');

  it('fit a curve from a few measured points that reproduces them', () => {
    const w = parseWorkloadYaml(yaml, 'w.yaml');
    expect(w.name).toBe('my-resnet');
    const t = predict(w, { kind: 'mig', gpu: A100, profile: '2g.10gb' }).iterationMs ?? NaN;
    expect(Math.abs(t / 38.2 - 1)).toBeLessThan(0.05);
    expect(predict(w, { kind: 'mig', gpu: A100, profile: '4g.20gb' }).iterationMs).toBeLessThan(31.7 * 1.05);
  });

  it('round-trip through workloadToYaml', () => {
    const w = parseWorkloadYaml(yaml, 'w.yaml');
    const points = [
      { gpu: 'A100-40GB', profile: '1g.5gb', iterationMs: 64.8 },
      { gpu: 'A100-40GB', profile: '2g.10gb', iterationMs: 38.2 },
      { gpu: 'A100-40GB', profile: '3g.20gb', iterationMs: 31.7 },
      { gpu: 'A100-40GB', profile: '7g.40gb', iterationMs: 29.6 },
    ];
    const again = parseWorkloadYaml(workloadToYaml(w, points), 'again.yaml');
    expect(again.curve).toEqual(w.curve);
    expect(again.memoryGiB).toBe(4.75);
    const curveOnly = workloadToYaml(w, []);
    expect(parseWorkloadYaml(curveOnly, 'c.yaml').curve.latencyMs).toBeCloseTo(w.curve.latencyMs, 2);
  });

  it('say where a file is wrong', () => {
    expect(() => parseWorkloadYaml(yaml.replace('batchSize: 128', 'batchSize: -1'), 'w.yaml')).toThrow(/w\.yaml:2: batchSize/);
    expect(() => parseWorkloadYaml(yaml.replace('profile: 3g.20gb', 'profile: 9g.99gb'), 'w.yaml')).toThrow(/w\.yaml:8: points\[2\]\.profile: profile '9g\.99gb'/);
    expect(() => parseWorkloadYaml(yaml.replace('gpu: A100-SXM4-40GB, profile: 1g', 'gpu: K80, profile: 1g'), 'w.yaml')).toThrow(/w\.yaml:6: points\[0\]\.gpu: unknown GPU/);
    expect(() => parseWorkloadYaml('name: x\nbatchSize: 1\ndatasetSize: 1\n', 'w.yaml')).toThrow(/give 'points'/);
    expect(() => parseWorkloadYaml('name: [', 'w.yaml')).toThrow(/w\.yaml:\d+: not valid YAML/);
  });

  it('word schema problems plainly: the field path, what is expected, what was found', () => {
    const fails = (text: string): string => {
      try {
        parseWorkloadYaml(text, 'w.yaml');
      } catch (e) {
        return (e as Error).message;
      }
      throw new Error('parsed');
    };
    const hint = "; a workload file is what 'migpool bench --out' writes";
    expect(fails(yaml.replace('batchSize: 128', 'batchSize: -1'))).toBe(`w.yaml:2: batchSize: expected a number greater than 0, got -1${hint}`);
    expect(fails(yaml.replace('iterationMs: 38.2', 'iterationMs: fast'))).toBe(`w.yaml:7: points[1].iterationMs: expected a number, got 'fast'${hint}`);
    expect(fails(yaml.replace('batchSize: 128', 'batchSize: 12.5'))).toBe(`w.yaml:2: batchSize: expected a whole number, got 12.5${hint}`);
    expect(fails(yaml.replace('name: my-resnet\n', ''))).toBe(`w.yaml:1: name: missing: give text${hint}`);
    expect(fails(yaml.replace('name: my-resnet', 'name: my-resnet\nbatchsize: 3'))).toBe(`w.yaml:1: the file: unknown field 'batchsize': remove it or check the spelling${hint}`);
    expect(fails(`${yaml}memoryBoundShare: 2\n`)).toMatch(/^w\.yaml:\d+: memoryBoundShare: expected a number of at most 1, got 2;/);
    expect(fails(`${yaml}sharing:\n  - { gpu: A100-SXM4-40GB, kind: mig, jobs: 2, iterationMs: 50 }\n`)).toMatch(/: sharing\[0\]\.kind: expected timeslice or mps, got 'mig';/);
  });
});

describe('purity', () => {
  it('src/perf reads no files, clock or randomness outside its tests', () => {
    const dir = fileURLToPath(new URL('.', import.meta.url));
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    for (const f of files) {
      const text = readFileSync(dir + f, 'utf8');
      expect(text, f).not.toMatch(/from 'node:|Date\.now|new Date|Math\.random|process\./);
    }
  });
});
