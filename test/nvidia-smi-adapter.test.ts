import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NvidiaSmiPort } from '../src/gpu/nvidia-smi/driver.js';
import { GpuError, GpuLostError } from '../src/gpu/port.js';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/nvidia-smi/${name}`, import.meta.url), 'utf8');

interface Reply {
  stdout?: string;
  stderr?: string;
  code?: number;
  sleepMs?: number;
  /** Ignores SIGTERM, as a tool stuck in the driver does. */
  ignoreTerm?: boolean;
  /** Leaves a child behind that holds stdout and stderr open for 20 s (output never "ends"). */
  holdPipes?: boolean;
}

/**
 * A stand-in `nvidia-smi` that answers each argument list with a canned reply: real captured
 * output, to drive the adapter through what real drivers print (the fake nvidia-smi covers the
 * stateful behaviour; this covers captured oddities and failures).
 */
function stub(replies: Record<string, Reply>): string {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-smi-stub-'));
  writeFileSync(join(dir, 'replies.json'), JSON.stringify(replies));
  const script = join(dir, 'nvidia-smi');
  writeFileSync(
    script,
    `#!${process.execPath}
const replies = JSON.parse(require('fs').readFileSync(${JSON.stringify(join(dir, 'replies.json'))}, 'utf8'));
const r = replies[process.argv.slice(2).join(' ')];
if (!r) { process.stderr.write('stub: no reply for ' + process.argv.slice(2).join(' ') + '\\n'); process.exit(2); }
if (r.ignoreTerm) process.on('SIGTERM', () => {});
if (r.holdPipes) require('child_process').spawn('sleep', ['20'], { stdio: 'inherit', detached: true }).unref();
setTimeout(() => { process.stdout.write(r.stdout || ''); process.stderr.write(r.stderr || ''); process.exit(r.code || 0); }, r.sleepMs || 0);
`,
  );
  chmodSync(script, 0o755);
  return script;
}

async function kindOf(promise: Promise<unknown>): Promise<{ kind: string; message: string }> {
  try {
    await promise;
  } catch (e) {
    if (e instanceof GpuError) return { kind: e.kind, message: e.message };
    throw e;
  }
  throw new Error('expected a failure');
}

const QUERY = '--query-gpu=index,uuid,name,pci.device_id,pci.bus_id,memory.total,mig.mode.current,mig.mode.pending --format=csv,noheader,nounits';

describe('nvidia-smi adapter over captured outputs', () => {
  it('reads GPUs, MIG-capable or not', async () => {
    const exe = stub({
      [QUERY]: {
        stdout: '0, GPU-14ac2834-0d81-0508-69eb-e25264c08d21, NVIDIA A100-PCIE-40GB, 0x20F110DE, 00000000:3B:00.0, 40960, Enabled, Enabled\n1, GPU-1b2c, NVIDIA RTX A6000, 0x223010DE, 00000000:5E:00.0, 49140, [N/A], [N/A]\n',
      },
    });
    const gpus = await new NvidiaSmiPort({ executable: exe }).listGpus();
    expect(gpus).toEqual([
      { index: 0, uuid: 'GPU-14ac2834-0d81-0508-69eb-e25264c08d21', name: 'NVIDIA A100-PCIE-40GB', pciDeviceId: '0x20F110DE', busId: '00000000:3B:00.0', memoryMiB: 40960, migCapable: true, migMode: { current: 'enabled', pending: 'enabled' } },
      { index: 1, uuid: 'GPU-1b2c', name: 'NVIDIA RTX A6000', pciDeviceId: '0x223010DE', busId: '00000000:5E:00.0', memoryMiB: 49140, migCapable: false, migMode: null },
    ]);
  });

  it('reads GPU instances from a real R510 -lgi', async () => {
    const exe = stub({ 'mig -i 0 -lgi': { stdout: fixture('a100-pcie-40gb_lgi-3-2-1-1_yokatayama-e-learning.txt') } });
    const gis = await new NvidiaSmiPort({ executable: exe }).listGpuInstances(0);
    expect(gis.map((g) => `${g.id}:${g.profile}@${g.start}:${g.size}`)).toEqual(['11:1g.5gb@0:1', '12:1g.5gb@1:1', '6:2g.10gb@2:2', '1:3g.20gb@4:4']);
  });

  it('treats "No MIG-enabled devices found" as no instances', async () => {
    const exe = stub({ 'mig -lgi': { stdout: 'No MIG-enabled devices found.\n', code: 6 }, 'mig -lci': { stdout: 'No MIG-enabled devices found.\n', code: 6 } });
    const port = new NvidiaSmiPort({ executable: exe });
    expect(await port.listGpuInstances()).toEqual([]);
    expect(await port.listComputeInstances()).toEqual([]);
  });

  it('maps MIG device UUIDs through -q -x when -L does not carry the instance IDs (R510)', async () => {
    const xml = fixture('a100-sxm4-40gb_q-x-mig-2-devices_netdata-go.d.plugin.txt');
    const lci = fixture('a100-pcie-40gb_lci-two-gis_yokatayama-e-learning.txt').replace(/ 11 {7}MIG/, '  1       MIG').replace(/ 12 {7}MIG/, '  2       MIG');
    const exe = stub({
      'mig -lci': { stdout: lci },
      '-L': { stdout: 'GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-27b94a00-ed54-5c24-b1fd-1054085de32a)\n  MIG 3g.20gb     Device  0: (UUID: MIG-aaaaaaaa-0d81-5269-9b96-65446729d5dc)\n  MIG 3g.20gb     Device  1: (UUID: MIG-bbbbbbbb-0d81-5269-9b96-65446729d5dc)\n' },
      '-q -x': { stdout: xml },
    });
    const cis = await new NvidiaSmiPort({ executable: exe }).listComputeInstances();
    expect(cis.map((c) => `${c.gpuInstanceId}/${c.id}=${c.uuid.slice(0, 12)}`)).toEqual(['1/0=MIG-aaaaaaaa', '2/0=MIG-bbbbbbbb']);
  });

  it('reads a pending enable (VM passthrough, Not Supported) as pending', async () => {
    const exe = stub({ '-i 0 -mig 1': { stdout: fixture('a100_mig-enable-pending-not-supported_mig-user-guide.txt') } });
    expect(await new NvidiaSmiPort({ executable: exe }).setMigMode(0, true)).toEqual({ pending: true });
  });

  it('reads an immediate enable and a successful reset', async () => {
    const exe = stub({
      '-i 0 -mig 1': { stdout: fixture('a100-40gb_mig-enable-success_mig-user-guide.txt') },
      '-i 0 -r': { stdout: fixture('h100_gpu-reset-success_nvsentinel-1692.txt') },
    });
    const port = new NvidiaSmiPort({ executable: exe });
    expect(await port.setMigMode(0, true)).toEqual({ pending: false });
    await port.resetGpu(0);
  });

  it('types the driver\'s refusals', async () => {
    const exe = stub({
      'mig -i 0 -cgi 1g.12gb+me:0': { stdout: fixture('gh200-96gb_cgi-C-in-use-by-another-client_kf-cuanschutz.txt'), code: 255 },
      'mig -i 0 -cgi 9:4': { stdout: fixture('a100-40gb_cgi-insufficient-resources-3g-not-first_mig-user-guide.txt'), code: 255 },
      '-i 0 -r': { stdout: fixture('multi-a100_gpu-reset-in-use_mig-parted-181.txt'), code: 255 },
      'mig -i 0 -gi 3 -ci 0 -dci': { stdout: fixture('h100_dci-in-use-lowercased_dcgm-95.txt'), code: 255 },
      [QUERY]: { stdout: fixture('unknown_driver-not-loaded_shine-cluster-50.txt'), code: 9 },
    });
    const port = new NvidiaSmiPort({ executable: exe });
    expect(await kindOf(port.createGpuInstance(0, '1g.12gb+me', 0))).toMatchObject({ kind: 'in-use' });
    const insufficient = await kindOf(port.createGpuInstance(0, '9', 4));
    expect(insufficient.kind).toBe('insufficient-resources');
    expect(insufficient.message).toMatch(/^GPU 0: create GPU instance 9 at 4: .*Insufficient Resources/);
    expect(await kindOf(port.resetGpu(0))).toMatchObject({ kind: 'reset-blocked' });
    expect(await kindOf(port.destroyComputeInstance(0, 3, 0))).toMatchObject({ kind: 'in-use' });
    expect(await kindOf(port.listGpus())).toMatchObject({ kind: 'driver-not-loaded' });
  });

  it('says what to do when nvidia-smi refuses a user without the MIG capabilities', async () => {
    const exe = stub({ 'mig -lgi': { stdout: fixture('a100-pcie-40gb_lgi-3-2-1-1_yokatayama-e-learning.txt') }, 'mig -lci': { stdout: fixture('unknown_lci-insufficient-permissions_hami-1044.txt'), code: 4 } });
    const e = await kindOf(new NvidiaSmiPort({ executable: exe }).listComputeInstances());
    expect(e.kind).toBe('no-permission');
    expect(e.message).toBe(
      'list compute instances: Failed to display compute instances: Insufficient Permissions (nvidia-smi mig -lci): run migpool as root, or grant its user the MIG capabilities (MIG User Guide, Device Nodes and Capabilities)',
    );
  });

  it('turns unparseable output into one typed line that quotes it', async () => {
    const exe = stub({ 'mig -i 0 -lgi': { stdout: '| GPU instances: |\n|  0  garbage row here |\n' } });
    const e = await kindOf(new NvidiaSmiPort({ executable: exe }).listGpuInstances(0));
    expect(e.kind).toBe('unparseable');
    expect(e.message.split('\n')).toHaveLength(1);
    expect(e.message).toMatch(/nvidia-smi mig -i 0 -lgi/);
  });

  it('gives up on a hung nvidia-smi after its timeout', async () => {
    const exe = stub({ [QUERY]: { stdout: '', sleepMs: 5000 } });
    const e = await kindOf(new NvidiaSmiPort({ executable: exe, timeoutMs: 300 }).listGpus());
    expect(e.kind).toBe('timeout');
    expect(e.message).toMatch(/did not answer within 300 ms/);
  });

  it('gives up at its timeout on an nvidia-smi that ignores SIGTERM, and does not read its late empty answer as no GPUs', async () => {
    // Before: Node's timeout sent SIGTERM and waited for the end; this stub exited 0 with nothing
    // printed 5 s later and listGpus answered [] (every GPU gone) after 5 s instead of 300 ms.
    const exe = stub({ [QUERY]: { stdout: '', sleepMs: 5000, ignoreTerm: true } });
    const t0 = Date.now();
    const e = await kindOf(new NvidiaSmiPort({ executable: exe, timeoutMs: 300 }).listGpus());
    expect(e.kind).toBe('timeout');
    expect(e.message).toMatch(/did not answer within 300 ms \(stopped with SIGKILL\)/);
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('gives up at its timeout when a child of nvidia-smi keeps its output open', async () => {
    const exe = stub({ [QUERY]: { stdout: '', sleepMs: 5000, holdPipes: true } });
    const t0 = Date.now();
    const e = await kindOf(new NvidiaSmiPort({ executable: exe, timeoutMs: 300 }).listGpus());
    expect(e.kind).toBe('timeout');
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('starts no new nvidia-smi while one killed at its timeout has not ended (stuck in the driver), and starts them again once it has', { timeout: 20_000 }, async () => {
    // SIGCONT in place of SIGKILL plays a process no signal ends (one in uninterruptible sleep).
    const exe = stub({ [QUERY]: { stdout: '', sleepMs: 4000 } });
    const port = new NvidiaSmiPort({ executable: exe, timeoutMs: 1500, killSignal: 'SIGCONT' });
    expect((await kindOf(port.listGpus())).message).toMatch(/did not answer within 1500 ms \(stopped with SIGCONT\)/);
    // A killed process normally ends within milliseconds: it counts as stuck after a second.
    await new Promise((r) => setTimeout(r, 1100));
    const t0 = Date.now();
    const e = await kindOf(port.listGpus());
    expect(Date.now() - t0).toBeLessThan(250);
    expect(e.kind).toBe('timeout');
    expect(e.message).toMatch(/^list GPUs: an earlier \S+ \(pid \d+\) has not ended since it was killed at its timeout \(stuck in the driver\?\): none is started until it ends; check dmesg for Xid errors/);
    // It ends (its sleep is over) and nvidia-smi answers again.
    writeFileSync(join(dirname(exe), 'replies.json'), JSON.stringify({ [QUERY]: { stdout: '0, GPU-1, NVIDIA A100-SXM4-40GB, 0x20B010DE, 00000000:00:04.0, 40960, Disabled, Disabled\n' } }));
    await new Promise((r) => setTimeout(r, 2500));
    expect((await port.listGpus()).map((g) => g.index)).toEqual([0]);
  });

  it('lets its process exit once it gave up on a stuck nvidia-smi (a serve asked to stop does not wait for it)', { timeout: 20_000 }, async () => {
    const exe = stub({ [QUERY]: { stdout: '', sleepMs: 8000 } });
    const driver = new URL('../dist/src/gpu/nvidia-smi/driver.js', import.meta.url).href;
    const script = `const { NvidiaSmiPort } = await import(${JSON.stringify(driver)}); await new NvidiaSmiPort({ executable: ${JSON.stringify(exe)}, timeoutMs: 500, killSignal: 'SIGCONT' }).listGpus().catch((e) => console.log(e.kind));`;
    const t0 = Date.now();
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 15_000 });
    expect(r.stdout.trim()).toBe('timeout');
    // Before, it lived until the stuck child ended (8 s here; never, for one stuck in the driver).
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('says so when nvidia-smi is killed before it finishes (partial output is not read)', async () => {
    const exe = stub({ [QUERY]: { stdout: '0, GPU-14ac2834-0d81-0508-69eb-e25264c08d21, NVIDIA A100-PCIE-40GB, 0x20F110DE, 00000000:3B:00.0, 40960, Enabled, Enabled\n', sleepMs: 5000 } });
    const port = new NvidiaSmiPort({ executable: exe, timeoutMs: 10_000 });
    const pending = kindOf(port.listGpus());
    // The stub is the newest process running this script: kill it as the OOM killer would.
    await new Promise((r) => setTimeout(r, 400));
    const { execFileSync } = await import('node:child_process');
    const pid = execFileSync('pgrep', ['-n', '-f', exe], { encoding: 'utf8' }).trim();
    process.kill(Number(pid), 'SIGKILL');
    const e = await pending;
    expect(e.kind).toBe('unknown');
    expect(e.message).toMatch(/was killed by SIGKILL before it finished/);
  });

  it('says when nvidia-smi is missing and points to --simulate', async () => {
    const e = await kindOf(new NvidiaSmiPort({ executable: '/nonexistent/nvidia-smi' }).listGpus());
    expect(e.kind).toBe('nvidia-smi-missing');
    expect(e.message).toMatch(/--simulate SPEC/);
  });
});

describe('nvidia-smi adapter when one GPU stops answering or warns', () => {
  // Two answering A100s (the first is the GPU of the -q -x capture) around one that fell off the
  // bus, in the line form of the 8-GPU capture (fixture rtx-3080-8gpu_query-gpu-one-lost): the
  // line on stderr, the others listed on stdout; exit status 15 per nvidia-smi's RETURN VALUE
  // (fixture p100-pcie_infoROM-corrupted-exit-14), or 0 as some drivers leave it.
  const ROWS =
    '0, GPU-27b94a00-ed54-5c24-b1fd-1054085de32a, NVIDIA A100-SXM4-40GB, 0x20B010DE, 00000000:00:04.0, 40960, Enabled, Enabled\n' +
    '2, GPU-5e0d8c11-8a53-4f5b-9c1e-2b7f0c3d4e5f, NVIDIA A100-SXM4-40GB, 0x20B010DE, 00000000:00:06.0, 40960, Disabled, Disabled\n';
  const LOST = 'Unable to determine the device handle for GPU1: 0000:00:05.0: Unknown Error\n';

  it.each([15, 0])('lists the GPUs that answer and names the lost one, with what to do (exit %i)', async (code) => {
    const exe = stub({ [QUERY]: { stdout: ROWS, stderr: LOST, code } });
    const e: unknown = await new NvidiaSmiPort({ executable: exe }).listGpus().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(GpuLostError);
    const lost = e as GpuLostError;
    expect(lost.kind).toBe('gpu-lost');
    expect(lost.code).toBe('DEVICE');
    expect(lost.answered.map((g) => g.index)).toEqual([0, 2]);
    expect(lost.lost).toMatchObject([{ index: 1, busId: '0000:00:05.0', reason: 'Unknown Error' }]);
    expect(lost.message).toBe(
      'list GPUs: nvidia-smi cannot reach GPU 1 (0000:00:05.0): Unknown Error (fallen off the bus? look for Xid 79 in dmesg; reset it with nvidia-smi -r -i 0000:00:05.0 or reboot the node, and reseat it if it comes back lost)',
    );
  });

  it('lists the instances and processes of the GPUs that answer', async () => {
    const exe = stub({
      [QUERY]: { stdout: ROWS, stderr: LOST, code: 15 },
      'mig -i 0 -lgi': { stdout: fixture('a100-pcie-40gb_lgi-3-2-1-1_yokatayama-e-learning.txt'), stderr: LOST, code: 15 },
      // The capture with one process added on its first MIG device (GI 1, CI 0), in the element
      // form of nvidia-smi's XML (see query-xml.ts).
      '-q -x': {
        stdout: fixture('a100-sxm4-40gb_q-x-mig-2-devices_netdata-go.d.plugin.txt').replace(
          /<processes>\s*<\/processes>/,
          '<processes><process_info><gpu_instance_id>1</gpu_instance_id><compute_instance_id>0</compute_instance_id><pid>4242</pid><type>C</type><process_name>python</process_name><used_memory>1000 MiB</used_memory></process_info></processes>',
        ),
        stderr: LOST,
        code: 15,
      },
    });
    const port = new NvidiaSmiPort({ executable: exe });
    expect((await port.listGpuInstances(0)).map((g) => g.start)).toEqual([0, 1, 2, 4]);
    expect(await port.listProcesses()).toEqual([{ pid: 4242, name: 'python', gpu: 0, gpuInstanceId: 1, computeInstanceId: 0, usedMemoryMiB: 1000 }]);
  });

  it('lists no processes, without a complaint, when every GPU is lost', async () => {
    const exe = stub({ [QUERY]: { stderr: LOST, code: 15 }, '-q -x': { stderr: LOST, code: 15 } });
    expect(await new NvidiaSmiPort({ executable: exe }).listProcesses()).toEqual([]);
  });

  it('says an operation on the lost GPU failed because the GPU is lost', async () => {
    const exe = stub({ 'mig -i 1 -cgi 1g.5gb:0': { stderr: 'Unable to determine the device handle for GPU1: 0000:00:05.0: Unknown Error\n', code: 15 } });
    const e = await kindOf(new NvidiaSmiPort({ executable: exe }).createGpuInstance(1, '1g.5gb', 0));
    expect(e.kind).toBe('gpu-lost');
    expect(e.message).toMatch(/^GPU 1: create GPU instance 1g\.5gb at 0: nvidia-smi cannot reach GPU 1 \(0000:00:05\.0\): Unknown Error .*reboot the node.*\(nvidia-smi mig -i 1 -cgi 1g\.5gb:0\)$/);
  });

  it.each([
    ['stdout', 14],
    ['stderr', 14],
  ])('reads a whole listing that ends with the corrupted-infoROM warning (on %s, exit %i)', async (stream, code) => {
    const warning = 'WARNING: infoROM is corrupted at gpu 0000:00:04.0\n';
    const exe = stub({ [QUERY]: stream === 'stdout' ? { stdout: ROWS + warning, code } : { stdout: ROWS, stderr: warning, code } });
    expect((await new NvidiaSmiPort({ executable: exe }).listGpus()).map((g) => g.index)).toEqual([0, 2]);
  });

  it('takes a change that succeeded beside the corrupted-infoROM warning (exit 14) as done', async () => {
    const exe = stub({ '-i 0 -r': { stdout: 'GPU 00000000:00:04.0 was successfully reset.\nWARNING: infoROM is corrupted at gpu 0000:00:04.0\n', code: 14 } });
    await expect(new NvidiaSmiPort({ executable: exe }).resetGpu(0)).resolves.toBeUndefined();
  });

  it('reads a reset followed by the persistence-mode warning as done', async () => {
    // The nvidia-smi man page (Known Issues): "resetting GPUs may print 'Warning: persistence mode
    // is disabled on device' if nvidia-persistenced is not running"; the line's full form as the
    // GH200 capture prints it after -mig 1 (fixture gh200-96gb_mig-enable-persistence-warning).
    const exe = stub({
      '-i 0 -r': {
        stdout:
          'GPU 00000000:00:04.0 was successfully reset.\n\nWarning: persistence mode is disabled on device 00000000:00:04.0. See the Known Issues section of the nvidia-smi(1) man page for more information. Run with [--help | -h] switch to get more information on how to enable persistence mode.\nAll done.\n',
      },
    });
    await expect(new NvidiaSmiPort({ executable: exe }).resetGpu(0)).resolves.toBeUndefined();
  });

  it('still fails a listing whose stderr says more than notices', async () => {
    const exe = stub({ [QUERY]: { stdout: ROWS, stderr: `${LOST}Failed to initialize NVML: Driver/library version mismatch\n`, code: 255 } });
    expect((await kindOf(new NvidiaSmiPort({ executable: exe }).listGpus())).kind).toBe('gpu-lost');
    const other = stub({ [QUERY]: { stdout: ROWS, stderr: 'Failed to initialize NVML: Driver/library version mismatch\n', code: 255 } });
    expect((await kindOf(new NvidiaSmiPort({ executable: other }).listGpus())).kind).toBe('driver-not-loaded');
  });
});
