import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ciProfilesOf } from '../../mig/compute-instances.js';
import { classifyError } from '../nvidia-smi/messages.js';
import { parseCsvQuery, parseLci, parseLcip, parseLgi, parseLgip, parseLgipp, parseListGpus } from '../nvidia-smi/parse.js';
import { GpuError, type GpuErrorKind } from '../port.js';
import { SimulatedMachine } from '../simulated/machine.js';
import { freeGiCount, migDevicesOf, profileFigures } from './format.js';
import { compiledMainPath, installFakeNvidiaSmi } from './install.js';
import { runFakeNvidiaSmi, STATE_ENV } from './main.js';
import { fakeSession, machineWithMig } from './test-support.js';

/** GPU 0: A100 with 3g (2c+1c CIs), 2g, 1g; GPU 1: H100, MIG on, empty; GPU 2: A30, MIG off. */
function mixedMachine(): SimulatedMachine {
  const m = machineWithMig('1xA100-SXM4-40GB,1xH100-80GB,1xA30', [0, 1]);
  const three = m.createGpuInstance(0, '3g.20gb', 4);
  m.createComputeInstance(0, three.id, '2c.3g.20gb');
  m.createComputeInstance(0, three.id, '1c.3g.20gb');
  const two = m.createGpuInstance(0, '2g.10gb', 0);
  m.createComputeInstance(0, two.id);
  m.createGpuInstance(0, '1g.5gb', 2);
  m.attachProcess(0, { gpuInstanceId: two.id, computeInstanceId: 0, usedMemoryMiB: 1234, name: 'train.py' });
  m.attachProcess(2, { usedMemoryMiB: 700 });
  return m;
}

const clone = (m: SimulatedMachine): SimulatedMachine => new SimulatedMachine(structuredClone(m.state));

describe('fake nvidia-smi: listings parse with the real parsers to the machine state', () => {
  const m = mixedMachine();
  const s = fakeSession(m);

  it('-L', () => {
    const listed = parseListGpus(s.run('-L').stdout);
    expect(listed.map((g) => ({ index: g.index, name: g.name, uuid: g.uuid }))).toEqual(m.listGpus().map((g) => ({ index: g.index, name: g.name, uuid: g.uuid })));
    for (const g of listed) {
      expect(g.migDevices.map((d) => ({ index: d.index, profile: d.profile, uuid: d.uuid }))).toEqual(
        migDevicesOf(m, g.index).map((d) => ({ index: d.index, profile: d.profile, uuid: d.uuid })),
      );
    }
    expect(listed[0]?.migDevices.map((d) => d.profile)).toEqual(['2c.3g.20gb', '1c.3g.20gb', '2g.10gb']);
  });

  it('mig -lgi and -lci (GPUs with MIG off are left out)', () => {
    const gis = parseLgi(s.run('mig', '-lgi').stdout).map((r) => ({ gpu: r.gpu, id: r.instanceId, profile: r.name, profileId: r.profileId, start: r.placement.start, size: r.placement.size }));
    expect(gis.sort((a, b) => a.gpu - b.gpu || a.id - b.id)).toEqual(m.listGpuInstances());
    const cis = parseLci(s.run('mig', '-lci').stdout);
    expect(cis.map((c) => ({ gpu: c.gpu, gpuInstanceId: c.gpuInstanceId, id: c.instanceId, profile: c.name, profileId: c.profileId })).sort((a, b) => a.gpuInstanceId - b.gpuInstanceId || a.id - b.id)).toEqual(
      m.listComputeInstances().map((c) => ({ gpu: c.gpu, gpuInstanceId: c.gpuInstanceId, id: c.id, profile: c.profile, profileId: c.profileId })),
    );
    for (const c of cis) expect(c.placement).toEqual(m.computeInstancePlacement(c.gpu, c.gpuInstanceId, c.instanceId));
    expect(parseLci(s.run('mig', '-lci', '-gi', '2', '-ci', '1').stdout).map((c) => [c.gpuInstanceId, c.instanceId, c.name])).toEqual([[2, 1, '1c.3g.20gb']]);
  });

  it('mig -lgip and -lgipp give the catalogue, with the free counts of the layout', () => {
    for (const gpu of [0, 1]) {
      const model = m.modelOf(gpu);
      const layout = m.listGpuInstances(gpu).map((i) => ({ profile: model.giProfiles.find((p) => p.name === i.profile)!, start: i.start, size: i.size }));
      const rows = parseLgip(s.run('mig', '-i', String(gpu), '-lgip').stdout);
      expect(rows).toEqual(
        model.giProfiles.map((p) => {
          const f = profileFigures(model, p);
          return { gpu, name: p.name, id: p.id, free: freeGiCount(model, layout, p), total: p.maxCount, memoryGiB: f.memoryGiB, p2p: 'No', sms: f.sms, decoders: f.decoders, encoders: f.encoders, copyEngines: f.copyEngines, jpeg: f.jpeg, ofa: f.ofa };
        }),
      );
      expect(parseLgipp(s.run('mig', '-i', String(gpu), '-lgipp').stdout)).toEqual(model.giProfiles.map((p) => ({ gpu, profileId: p.id, placements: p.placements })));
    }
    // 3g at 4 and 2g at 0 leave slots 2 and 3: two more 1g.5gb, of which one is taken by GI 9.
    expect(parseLgip(s.run('mig', '-i', '0', '-lgip').stdout).find((r) => r.name === '1g.5gb')?.free).toBe(1);
  });

  it('mig -lcip lists the CI profiles of each GI with the free counts', () => {
    const rows = parseLcip(s.run('mig', '-i', '0', '-lcip', '-gi', '2').stdout);
    expect(rows.map((r) => [r.gpuInstanceId, r.name, r.profileId, r.isDefault, r.free, r.total, r.sms])).toEqual([
      [2, '1c.3g.20gb', 0, false, 0, 3, 14],
      [2, '2c.3g.20gb', 1, false, 0, 1, 28],
      [2, '3g.20gb', 2, true, 0, 1, 42],
    ]);
    const all = parseLcip(s.run('mig', '-lcip').stdout);
    const model = m.modelOf(0);
    expect(all.map((r) => `${r.gpuInstanceId}:${r.name}`)).toEqual(
      m
        .listGpuInstances(0)
        .sort((a, b) => model.giProfiles.findIndex((p) => p.name === a.profile) - model.giProfiles.findIndex((p) => p.name === b.profile))
        .flatMap((gi) => ciProfilesOf(model.giProfiles.find((p) => p.name === gi.profile)!).map((c) => `${gi.id}:${c.name}`)),
    );
  });

  it('--query-gpu in all three CSV forms', () => {
    const fields = ['index', 'uuid', 'name', 'pci.device_id', 'pci.bus_id', 'memory.total', 'mig.mode.current', 'mig.mode.pending'];
    const q = `--query-gpu=${fields.join(',')}`;
    const full = s.run(q, '--format=csv').stdout;
    expect(full.split('\n')[0]).toBe('index, uuid, name, pci.device_id, pci.bus_id, memory.total [MiB], mig.mode.current, mig.mode.pending');
    const expected = m.listGpus().map((g) => ({
      index: String(g.index),
      uuid: g.uuid,
      name: g.name,
      'pci.device_id': g.pciDeviceId,
      'pci.bus_id': g.busId,
      'memory.total': `${g.memoryMiB} MiB`,
      'mig.mode.current': g.migMode?.current === 'enabled' ? 'Enabled' : 'Disabled',
      'mig.mode.pending': g.migMode?.pending === 'enabled' ? 'Enabled' : 'Disabled',
    }));
    expect(parseCsvQuery(full)).toEqual(expected);
    expect(parseCsvQuery(s.run(q, '--format=csv,noheader').stdout, fields)).toEqual(expected);
    const bare = parseCsvQuery(s.run(q, '--format=csv,noheader,nounits').stdout, fields);
    expect(bare.map((r) => r['memory.total'])).toEqual(m.listGpus().map((g) => String(g.memoryMiB)));
    expect(parseCsvQuery(s.run('-i', '1', '--query-gpu', 'index,mig.mode.current', '--format', 'csv').stdout)).toEqual([{ index: '1', 'mig.mode.current': 'Enabled' }]);
  });

  it('--query-compute-apps (real header; no "No running processes found" in CSV)', () => {
    const text = s.run('--query-compute-apps=pid,process_name,gpu_uuid,used_memory', '--format=csv').stdout;
    expect(text.split('\n')[0]).toBe('pid, process_name, gpu_uuid, used_gpu_memory [MiB]');
    const gpus = m.listGpus();
    expect(parseCsvQuery(text)).toEqual(
      m.listProcesses().map((p) => ({ pid: String(p.pid), process_name: p.name, gpu_uuid: gpus[p.gpu]?.uuid, used_gpu_memory: `${p.usedMemoryMiB} MiB` })),
    );
    const none = fakeSession(machineWithMig('A30')).run('--query-compute-apps=pid,used_memory', '--format=csv,noheader');
    expect(none).toEqual({ stdout: '', stderr: '', code: 0 });
  });

  it('-q -x: MIG devices numbered as -L numbers them, processes with GI/CI IDs or N/A', () => {
    const xml = s.run('-q', '-x').stdout;
    expect(xml.startsWith('<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log')).toBe(true);
    expect(xml).toContain('<attached_gpus>3</attached_gpus>');
    const gpuBlocks = xml.split('<gpu id="').slice(1);
    expect(gpuBlocks.map((b) => b.slice(0, b.indexOf('"')))).toEqual(m.listGpus().map((g) => g.busId));
    const devices = [...(gpuBlocks[0] ?? '').matchAll(/<index>(\d+)<\/index>\s*<gpu_instance_id>(\d+)<\/gpu_instance_id>\s*<compute_instance_id>(\d+)<\/compute_instance_id>/g)].map((d) => d.slice(1).map(Number));
    expect(devices).toEqual(migDevicesOf(m, 0).map((d) => [d.index, d.gpuInstanceId, d.computeInstanceId]));
    expect(gpuBlocks[0]).toContain('<pci_device_id>20B010DE</pci_device_id>');
    expect(gpuBlocks[0]).toMatch(/<gpu_instance_id>3<\/gpu_instance_id>\s*<compute_instance_id>0<\/compute_instance_id>\s*<pid>4000<\/pid>\s*<type>C<\/type>\s*<process_name>train.py<\/process_name>\s*<used_memory>1234 MiB<\/used_memory>/);
    expect(gpuBlocks[2]).toMatch(/<gpu_instance_id>N\/A<\/gpu_instance_id>\s*<compute_instance_id>N\/A<\/compute_instance_id>\s*<pid>4001<\/pid>/);
    expect(gpuBlocks[2]).toContain('<current_mig>Disabled</current_mig>');
    expect(s.run('-q', '-x', '-i', '1').stdout.split('<gpu id="')).toHaveLength(2);
  });

  it('listings on nothing print the real "not found" lines', () => {
    const empty = fakeSession(machineWithMig('2xA100-SXM4-40GB', [1]));
    expect(empty.run('mig', '-lgi')).toEqual({ stdout: 'No GPU instances found: Not Found\n', stderr: '', code: 6 });
    expect(parseLgi(empty.run('mig', '-lgi').stdout)).toEqual([]);
    expect(parseLci(empty.run('mig', '-lci').stdout)).toEqual([]);
    expect(parseLcip(empty.run('mig', '-lcip').stdout)).toEqual([]);
    expect(empty.run('mig', '-i', '0', '-lgi')).toEqual({ stdout: 'No MIG-enabled devices found.\n', stderr: '', code: 6 });
    expect(empty.run('mig', '-i', '0', '-lgip').stdout).toBe('No MIG-enabled devices found.\n');
  });
});

describe('fake nvidia-smi: a GPU that fell off the bus, a corrupted infoROM', () => {
  it('leaves the lost GPU out of every answer, names it on stderr as real nvidia-smi does, exit 15', () => {
    const m = mixedMachine();
    m.setLost(1, true);
    const s = fakeSession(m);
    const bus = m.listGpus()[1]!.busId.replace(/^0000/, '');
    const line = `Unable to determine the device handle for GPU1: ${bus}: Unknown Error\n`;
    const q = s.run('--query-gpu=index,name', '--format=csv,noheader');
    expect(q).toEqual({ stdout: '0, NVIDIA A100-SXM4-40GB\n2, NVIDIA A30\n', stderr: line, code: 15 });
    expect(parseListGpus(s.run('-L').stdout).map((g) => g.index)).toEqual([0, 2]);
    expect(s.run('mig', '-lgi').stderr).toBe(line);
    // An operation on it: only the line.
    expect(s.run('mig', '-i', '1', '-cgi', '1g.10gb:0')).toEqual({ stdout: '', stderr: line, code: 15 });
    expect(classifyError(line).kind).toBe('gpu-lost');
    m.setLost(1, false);
    expect(m.state.gpus[1]?.lost).toBeUndefined();
  });

  it('warns of a corrupted infoROM after a whole answer, exit 14', () => {
    const m = mixedMachine();
    m.setInfoRomCorrupted(2, true);
    const s = fakeSession(m);
    const r = s.run('--query-gpu=index', '--format=csv,noheader');
    expect(r).toEqual({ stdout: `0\n1\n2\nWARNING: infoROM is corrupted at gpu ${m.listGpus()[2]!.busId.replace(/^0000/, '')}\n`, stderr: '', code: 14 });
  });
});

describe('fake nvidia-smi: commands change the state file', () => {
  it('creates GPU instances at explicit placements, with -C', () => {
    const s = fakeSession(machineWithMig('A100-SXM4-40GB'));
    const r = s.run('mig', '-i', '0', '-cgi', '19:3,2g.10gb:0,MIG 3g.20gb:4', '-C');
    expect(r.code).toBe(0);
    expect(parseLgi(s.run('mig', '-lgi').stdout).map((g) => [g.name, g.instanceId, g.placement.start, g.placement.size])).toEqual([
      ['1g.5gb', 10, 3, 1],
      ['2g.10gb', 3, 0, 2],
      ['3g.20gb', 2, 4, 4],
    ]);
    expect(s.machine().listComputeInstances().map((c) => [c.gpuInstanceId, c.profile])).toEqual([
      [2, '3g.20gb'],
      [3, '2g.10gb'],
      [10, '1g.5gb'],
    ]);
  });

  it('keeps the state across invocations and leaves it alone when nothing changes', () => {
    const s = fakeSession(machineWithMig('H100-80GB', []));
    expect(s.run('mig', '-lgi').stdout).toBe('No MIG-enabled devices found.\n');
    const before = readFileSync(s.path, 'utf8');
    s.run('-L');
    expect(readFileSync(s.path, 'utf8')).toBe(before);
    expect(s.run('-i', '0', '-mig', '1').code).toBe(0);
    expect(s.run('mig', '-i', '0', '-cgi', '9,9').code).toBe(0);
    expect(s.run('mig', '-i', '0', '-gi', '1,2', '-cci', '2c.3g.40gb,1c.3g.40gb').code).toBe(0);
    expect(parseLci(s.run('mig', '-lci').stdout).map((c) => `${c.gpuInstanceId}/${c.instanceId}:${c.name}`)).toEqual([
      '1/1:1c.3g.40gb',
      '1/0:2c.3g.40gb',
      '2/1:1c.3g.40gb',
      '2/0:2c.3g.40gb',
    ]);
    expect(s.run('mig', '-dci', '-ci', '0').stdout.split('\n').filter((l) => l !== '')).toHaveLength(2);
    expect(s.machine().listComputeInstances().map((c) => `${c.gpuInstanceId}/${c.id}`)).toEqual(['1/1', '2/1']);
    expect(s.run('mig', '-dci').code).toBe(0);
    expect(s.run('mig', '-dgi', '-gi', '2').stdout).toBe('Successfully destroyed GPU instance ID  2 from GPU  0\n');
    expect(s.machine().listGpuInstances().map((g) => g.id)).toEqual([1]);
    expect(s.run('-i', '0', '-mig', '0').stdout).toBe('Disabled MIG Mode for GPU 00000000:07:00.0\nAll done.\n');
    expect(s.machine().listGpus()[0]?.migMode).toEqual({ current: 'disabled', pending: 'disabled' });
  });

  it('selects GPUs by index list, UUID or bus ID', () => {
    const m = machineWithMig('3xA30');
    const s = fakeSession(m);
    const uuid = m.listGpus()[2]?.uuid ?? '';
    expect(parseListGpus(s.run('-i', '0,2', '-L').stdout).map((g) => g.index)).toEqual([0, 2]);
    expect(parseListGpus(s.run('-L', '-i', uuid).stdout).map((g) => g.index)).toEqual([2]);
    expect(parseListGpus(s.run('--id=00000000:17:00.0', '-L').stdout).map((g) => g.index)).toEqual([1]);
    expect(s.run('-i', '7', '-L')).toEqual({ stdout: 'No devices were found\n', stderr: '', code: 6 });
  });
});

describe('fake nvidia-smi: failures classify as the simulator would fail', () => {
  interface Case {
    name: string;
    machine: () => SimulatedMachine;
    argv: string[];
    /** The same operation on the simulator, which must throw a GpuError of the same kind. */
    direct: ((m: SimulatedMachine) => unknown) | null;
    kind: GpuErrorKind;
    code: number;
  }
  const withCi = (): SimulatedMachine => {
    const m = machineWithMig('H100-80GB');
    m.createComputeInstance(0, m.createGpuInstance(0, '3g.40gb', 0).id);
    return m;
  };
  const cases: Case[] = [
    { name: 'no room', machine: () => machineWithMig('A30'), argv: ['mig', '-i', '0', '-cgi', '0,0'], direct: (m) => [m.createGpuInstance(0, '0'), m.createGpuInstance(0, '0')], kind: 'insufficient-resources', code: 255 },
    { name: 'unknown profile', machine: () => machineWithMig('A30'), argv: ['mig', '-i', '0', '-cgi', '7g.80gb'], direct: (m) => m.createGpuInstance(0, '7g.80gb'), kind: 'invalid-argument', code: 2 },
    { name: 'illegal placement', machine: () => machineWithMig('A100-SXM4-40GB'), argv: ['mig', '-i', '0', '-cgi', '9:2'], direct: (m) => m.createGpuInstance(0, '9', 2), kind: 'invalid-argument', code: 2 },
    { name: 'MIG off', machine: () => machineWithMig('H100-80GB', []), argv: ['mig', '-i', '0', '-cgi', '19'], direct: (m) => m.createGpuInstance(0, '19'), kind: 'not-supported', code: 3 },
    {
      name: 'MIG pending',
      machine: () => {
        const m = machineWithMig('A100-SXM4-40GB', []);
        m.setMigMode(0, true);
        return m;
      },
      argv: ['mig', '-i', '0', '-cgi', '19', '-C'],
      direct: (m) => m.createGpuInstance(0, '19'),
      kind: 'mode-change-pending',
      code: 3,
    },
    { name: 'GI with CIs', machine: withCi, argv: ['mig', '-dgi'], direct: (m) => m.destroyGpuInstance(0, 1), kind: 'in-use', code: 255 },
    {
      name: 'CI with a process',
      machine: () => {
        const m = withCi();
        m.attachProcess(0, { gpuInstanceId: 1, computeInstanceId: 0 });
        return m;
      },
      argv: ['mig', '-dci', '-i', '0'],
      direct: (m) => m.destroyComputeInstance(0, 1, 0),
      kind: 'in-use',
      code: 255,
    },
    { name: 'no such GI', machine: withCi, argv: ['mig', '-i', '0', '-gi', '5', '-cci'], direct: (m) => m.createComputeInstance(0, 5), kind: 'not-found', code: 6 },
    { name: 'GI full', machine: withCi, argv: ['mig', '-i', '0', '-gi', '1', '-cci', '3g.40gb'], direct: (m) => m.createComputeInstance(0, 1, '3g.40gb'), kind: 'insufficient-resources', code: 255 },
    {
      name: 'reset while in use',
      machine: () => {
        const m = machineWithMig('A100-SXM4-40GB', []);
        m.attachProcess(0);
        return m;
      },
      argv: ['-i', '0', '--gpu-reset'],
      direct: (m) => m.resetGpu(0),
      kind: 'reset-blocked',
      code: 255,
    },
    {
      name: 'no permission (injected)',
      machine: () => {
        const m = machineWithMig('A30');
        m.injectFault({ operation: 'createGpuInstance', kind: 'no-permission' });
        return m;
      },
      argv: ['mig', '-cgi', '14'],
      direct: (m) => m.createGpuInstance(0, '14'),
      kind: 'no-permission',
      code: 4,
    },
    {
      name: 'reset not supported (injected)',
      machine: () => {
        const m = machineWithMig('A30');
        m.injectFault({ operation: 'resetGpu', kind: 'not-supported' });
        return m;
      },
      argv: ['-r'],
      direct: (m) => m.resetGpu(0),
      kind: 'not-supported',
      code: 3,
    },
    {
      name: 'MIG mode refused (injected)',
      machine: () => {
        const m = machineWithMig('H100-80GB', []);
        m.injectFault({ operation: 'setMigMode', kind: 'not-supported' });
        return m;
      },
      argv: ['-mig', '1'],
      direct: (m) => m.setMigMode(0, true),
      kind: 'not-supported',
      code: 3,
    },
    {
      name: 'driver gone (injected)',
      machine: () => {
        const m = machineWithMig('A30');
        m.injectFault({ operation: 'destroyGpuInstance', kind: 'driver-not-loaded' });
        m.createGpuInstance(0, '14');
        return m;
      },
      argv: ['mig', '-dgi'],
      direct: (m) => m.destroyGpuInstance(0, 3),
      kind: 'driver-not-loaded',
      code: 9,
    },
    { name: 'MIG off, listing', machine: () => machineWithMig('A30', []), argv: ['mig', '-lgi'], direct: null, kind: 'not-found', code: 6 },
    { name: 'nothing to destroy', machine: () => machineWithMig('A30'), argv: ['mig', '-dci'], direct: null, kind: 'not-found', code: 6 },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const m = c.machine();
      if (c.direct) {
        const direct = c.direct;
        const copy = clone(m);
        let thrown: unknown = null;
        try {
          direct(copy);
        } catch (e) {
          thrown = e;
        }
        expect(thrown).toBeInstanceOf(GpuError);
        expect((thrown as GpuError).kind).toBe(c.kind);
      }
      const r = fakeSession(m).run(...c.argv);
      expect(classifyError(`${r.stdout}${r.stderr}`).kind).toBe(c.kind);
      expect(r.code).toBe(c.code);
    });
  }

  it('keeps the GPU instances created before a failure', () => {
    const s = fakeSession(machineWithMig('A30'));
    const r = s.run('mig', '-cgi', '2g.12gb,2g.12gb,1g.6gb', '-C');
    expect(r.stdout.match(/^Successfully created GPU instance/gm)).toHaveLength(2);
    expect(r.stderr).toBe('Unable to create a GPU instance on GPU  0 using profile 14: Insufficient Resources\nFailed to create GPU instances: Insufficient Resources\n');
    expect(s.machine().listGpuInstances()).toHaveLength(2);
  });

  it('a missing state file is a driver that is not loaded; a missing variable is named', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fake-nvidia-smi-'));
    const gone = runFakeNvidiaSmi(['-L'], { [STATE_ENV]: join(dir, 'none.json') });
    expect(gone.code).toBe(9);
    expect(gone.stdout).toBe("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n");
    expect(classifyError(gone.stdout).kind).toBe('driver-not-loaded');
    const unset = runFakeNvidiaSmi(['-L'], {});
    expect(unset.code).toBe(255);
    expect(unset.stderr).toContain(STATE_ENV);
    rmSync(dir, { recursive: true });
  });

  it('unknown or incomplete options: one line, status 2', () => {
    const s = fakeSession(machineWithMig('A30'));
    for (const argv of [['--frobnicate'], ['mig', '-lgi', '-lci'], ['-mig', '2'], ['--query-gpu=index'], ['-q'], ['mig', '-cgi']]) {
      const r = s.run(...argv);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(classifyError(r.stderr).kind).toBe('invalid-argument');
    }
    const field = s.run('--query-gpu=index,fan.speed', '--format=csv');
    expect(field).toEqual({ stdout: '', stderr: 'Field "fan.speed" is not a valid field to query.\n', code: 2 });
  });
});

const root = fileURLToPath(new URL('../../../', import.meta.url));
const built = existsSync(compiledMainPath());

describe.skipIf(!built)('fake nvidia-smi as an executable (needs npm run build)', () => {
  it('bin/fake-nvidia-smi.js and an installed nvidia-smi on PATH run the compiled fake', () => {
    const m = machineWithMig('2xA100-SXM4-40GB');
    const s = fakeSession(m);
    const viaBin = spawnSync(process.execPath, [join(root, 'bin/fake-nvidia-smi.js'), '-L'], { env: { ...process.env, ...s.env }, encoding: 'utf8' });
    expect(viaBin.status).toBe(0);
    expect(parseListGpus(viaBin.stdout).map((g) => g.uuid)).toEqual(m.listGpus().map((g) => g.uuid));

    const dir = mkdtempSync(join(tmpdir(), 'fake-nvidia-smi-bin-'));
    expect(installFakeNvidiaSmi(dir)).toBe(join(dir, 'nvidia-smi'));
    const env = { ...process.env, ...s.env, PATH: `${dir}${delimiter}${process.env.PATH ?? ''}` };
    const made = spawnSync('nvidia-smi', ['mig', '-i', '1', '-cgi', '9,9', '-C'], { env, encoding: 'utf8' });
    expect(made.status).toBe(0);
    const listed = spawnSync('nvidia-smi', ['mig', '-lgi'], { env, encoding: 'utf8' });
    expect(parseLgi(listed.stdout).map((g) => [g.gpu, g.name])).toEqual([
      [1, '3g.20gb'],
      [1, '3g.20gb'],
    ]);
    const failed = spawnSync('nvidia-smi', ['mig', '-i', '1', '-cgi', '9'], { env, encoding: 'utf8' });
    expect(failed.status).toBe(255);
    expect(classifyError(failed.stdout + failed.stderr).kind).toBe('insufficient-resources');
    rmSync(dir, { recursive: true });
  });
});
