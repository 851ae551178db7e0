import { execFile, type ChildProcess } from 'node:child_process';
import { MigpoolError } from '../../errors.js';
import { GpuError, GpuLostError, type ComputeInstanceInfo, type GpuInfo, type GpuInstanceInfo, type GpuPort, type GpuProcess, type MigModeState } from '../port.js';
import {
  classifyError,
  parseCreatedComputeInstances,
  parseCreatedGpuInstances,
  parseDestroyed,
  parseMigModeChange,
  parseReset,
} from './messages.js';
import { parseCsvQuery, parseLci, parseLgi, parseListGpus } from './parse.js';
import { describeLost, dropInfoRomWarnings, splitNotices, type LostGpu } from './notices.js';
import { parseQueryXml } from './query-xml.js';

/** Options of the nvidia-smi adapter; defaults in brackets. */
export interface NvidiaSmiOptions {
  /** Executable to run [`nvidia-smi`, found on PATH]. */
  readonly executable?: string;
  /** Per-command limit in milliseconds [30000]. */
  readonly timeoutMs?: number;
  /** Environment of the child [this process's]. */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * Signal sent to a command past its timeout [SIGKILL]. Tests pass one the child ignores (SIGCONT)
   * to play a process stuck in the driver, which no signal ends.
   */
  readonly killSignal?: NodeJS.Signals;
}

interface RunResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number;
}

const GPU_FIELDS = ['index', 'uuid', 'name', 'pci.device_id', 'pci.bus_id', 'memory.total', 'mig.mode.current', 'mig.mode.pending'] as const;

/** "No MIG-enabled devices found." is what `mig -lgi/-lci` print when no GPU is in MIG mode. */
const NO_MIG_DEVICES = /No MIG-enabled devices found/i;
/**
 * Empty listings, which nvidia-smi reports with a non-zero exit status: "No GPU instances found:
 * Not Found", "No compute instances found: Not Found" (fixture a100-pcie-40gb_lci-no-compute-instances).
 */
const EMPTY_LISTING = /No MIG-enabled devices found|No (GPU|compute) instances found/i;

/**
 * A command killed at its timeout that is still there this long after is taken as stuck (a
 * SIGKILLed process ends as soon as the kernel lets it: within milliseconds unless it waits in
 * the driver); until then new commands still start.
 */
const STUCK_AFTER_MS = 1000;

function modeOf(text: string): MigModeState | null {
  if (/^enabled$/i.test(text)) return 'enabled';
  if (/^disabled$/i.test(text)) return 'disabled';
  return null;
}

/**
 * The GPU port over NVIDIA's `nvidia-smi`, run with execFile and an argument list (never a shell)
 * and a timeout. Every answer is read by the parsers of real output in `parse.ts`, `messages.ts`
 * and `query-xml.ts`; every failure comes back as a GpuError with the driver's reason, typed.
 */
export class NvidiaSmiPort implements GpuPort {
  private readonly executable: string;
  private readonly timeoutMs: number;
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly killSignal: NodeJS.Signals;
  /**
   * Commands killed at their timeout that have not ended yet (stuck in the driver, where even
   * SIGKILL waits): while one is, no new command is started, or a hung driver would collect one
   * unkillable nvidia-smi per read, every few seconds, for as long as it hangs.
   */
  private readonly stuck = new Map<ChildProcess, number>();

  constructor(options: NvidiaSmiOptions = {}) {
    this.executable = options.executable ?? 'nvidia-smi';
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.env = options.env;
    this.killSignal = options.killSignal ?? 'SIGKILL';
  }

  private run(args: readonly string[], operation: string, gpu: number | null): Promise<RunResult> {
    // The same words while it lasts (no running count): callers say a failure once per cause.
    const earlier = [...this.stuck].find(([, killedAt]) => Date.now() - killedAt >= STUCK_AFTER_MS)?.[0];
    if (earlier !== undefined) {
      return Promise.reject(
        new GpuError(
          'timeout',
          operation,
          gpu,
          `an earlier ${this.executable} (pid ${earlier.pid ?? '?'}) has not ended since it was killed at its timeout (stuck in the driver?): none is started until it ends; check dmesg for Xid errors, a GPU reset or a reboot may be needed`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      let settled = false;
      const settle = (fn: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        fn();
      };
      const child = execFile(this.executable, [...args], { env: this.env ?? process.env, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
        settle(() => {
          if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
            reject(
              new GpuError(
                'nvidia-smi-missing',
                operation,
                null,
                `${this.executable} not found: install the NVIDIA driver, or run migpool with --simulate SPEC (e.g. --simulate 2xA100-SXM4-40GB)`,
              ),
            );
            return;
          }
          // Killed by someone else (the OOM killer, an operator): what it printed is cut short.
          if (error && typeof error.code !== 'number' && error.signal) {
            reject(new GpuError('unknown', operation, gpu, `${this.executable} ${args.join(' ')} was killed by ${error.signal} before it finished; run it by hand to see whether it answers`));
            return;
          }
          const code = error ? (typeof error.code === 'number' ? error.code : 255) : 0;
          // A corrupted infoROM's warning (exit 14) beside an answer or a success: the command did its work.
          const { warnings, ...kept } = dropInfoRomWarnings(stdout, stderr, code);
          resolve(warnings.length > 0 ? kept : { stdout, stderr, code });
        });
      });
      // Node's own `timeout` only sends SIGTERM and then waits for the child to end: a child that
      // ignores it, or one stuck in the driver (uninterruptible, as nvidia-smi is while the kernel
      // module waits on a GPU that stopped answering), would keep the caller waiting without end,
      // and its late exit 0 with nothing printed read as "no GPUs". At the deadline it is sent
      // SIGKILL and the caller has its answer at once, whether or not the child is gone yet.
      const deadline = setTimeout(() => {
        child.kill(this.killSignal);
        if (child.exitCode === null && child.signalCode === null) {
          this.stuck.set(child, Date.now());
          child.once('exit', () => this.stuck.delete(child));
          // Given up on: it no longer keeps this process alive (a `migpool serve` asked to stop, a
          // command that has answered), even if it never ends.
          child.unref();
          child.stdout?.destroy();
          child.stderr?.destroy();
        }
        settle(() =>
          reject(
            new GpuError(
              'timeout',
              operation,
              gpu,
              `${this.executable} ${args.join(' ')} did not answer within ${this.timeoutMs} ms (stopped with ${this.killSignal}): check that the driver answers (nvidia-smi by hand, dmesg for Xid errors)`,
            ),
          ),
        );
      }, this.timeoutMs);
    });
  }

  /** Turns a failed command's text into a typed error. */
  private failure(result: RunResult, args: readonly string[], operation: string, gpu: number | null): GpuError {
    const text = `${result.stdout}\n${result.stderr}`;
    const lost = splitNotices(text).lost;
    if (lost.length > 0) return new GpuError('gpu-lost', operation, gpu, `${describeLost(lost)} (nvidia-smi ${args.join(' ')})`);
    const { kind, line } = classifyError(text);
    const why = line || `exit status ${result.code} and no message`;
    // MIG User Guide, Device Nodes and Capabilities: MIG actions need the driver's MIG capabilities,
    // which root (or CAP_SYS_ADMIN) holds implicitly; a user without them is refused.
    const advice = kind === 'no-permission' ? ': run migpool as root, or grant its user the MIG capabilities (MIG User Guide, Device Nodes and Capabilities)' : '';
    return new GpuError(kind, operation, gpu, `${why} (nvidia-smi ${args.join(' ')})${advice}`);
  }

  /**
   * Runs a listing; non-zero exit is a typed error, unless nvidia-smi's only complaints are lines
   * about single GPUs (one that no longer answers, a corrupted infoROM: see notices.ts): those
   * lines are taken out and the GPUs named as lost are returned beside the text.
   */
  private async listWithNotices(args: readonly string[], operation: string, gpu: number | null): Promise<{ text: string; lost: readonly LostGpu[] }> {
    const result = await this.run(args, operation, gpu);
    const out = splitNotices(result.stdout);
    const err = splitNotices(result.stderr);
    const lost = [...out.lost, ...err.lost];
    const onlyNotices = lost.length + out.warnings.length + err.warnings.length > 0 && err.rest.trim() === '';
    if (result.code !== 0 && !onlyNotices && !EMPTY_LISTING.test(result.stdout + result.stderr)) throw this.failure(result, args, operation, gpu);
    return { text: out.rest + (result.code === 0 || onlyNotices ? '' : err.rest), lost };
  }

  /** Runs a listing (see listWithNotices), dropping what it says of lost GPUs: they are absent from the text. */
  private async list(args: readonly string[], operation: string, gpu: number | null): Promise<string> {
    return (await this.listWithNotices(args, operation, gpu)).text;
  }

  /**
   * The text of `nvidia-smi -q -x`, or null when nothing but lost-GPU lines came (every GPU it
   * would list fell off the bus: no capture shows what the XML is then, so nothing is read).
   */
  private async queryXml(operation: string): Promise<string | null> {
    const { text, lost } = await this.listWithNotices(['-q', '-x'], operation, null);
    return text.trim() === '' && lost.length > 0 ? null : text;
  }

  /** Parses, turning a parser's complaint into a typed `unparseable` error. */
  private parse<T>(operation: string, gpu: number | null, read: () => T): T {
    try {
      return read();
    } catch (e) {
      if (e instanceof MigpoolError && !(e instanceof GpuError)) throw new GpuError('unparseable', operation, gpu, e.message);
      throw e;
    }
  }

  async listGpus(): Promise<GpuInfo[]> {
    const args = [`--query-gpu=${GPU_FIELDS.join(',')}`, '--format=csv,noheader,nounits'];
    const { text, lost } = await this.listWithNotices(args, 'list GPUs', null);
    const rows = this.parse('list GPUs', null, () => parseCsvQuery(text, GPU_FIELDS, `nvidia-smi ${args.join(' ')}`));
    const gpus = rows.map((r): GpuInfo => {
      const current = modeOf(r['mig.mode.current'] ?? '');
      const pending = modeOf(r['mig.mode.pending'] ?? '');
      const index = Number(r['index']);
      if (!Number.isInteger(index)) throw new GpuError('unparseable', 'list GPUs', null, `index '${r['index']}' is not a number (nvidia-smi ${args.join(' ')})`);
      const deviceId = (r['pci.device_id'] ?? '').replace(/^0x/i, '').toUpperCase();
      return {
        index,
        uuid: r['uuid'] ?? '',
        name: r['name'] ?? '',
        pciDeviceId: `0x${deviceId}`,
        busId: r['pci.bus_id'] ?? '',
        memoryMiB: Number(r['memory.total']),
        migCapable: current !== null,
        migMode: current !== null && pending !== null ? { current, pending } : null,
      };
    });
    if (lost.length > 0) throw new GpuLostError('list GPUs', describeLost(lost), gpus, lost);
    return gpus;
  }

  private static selector(gpu?: number): string[] {
    return gpu === undefined ? [] : ['-i', String(gpu)];
  }

  async listGpuInstances(gpu?: number): Promise<GpuInstanceInfo[]> {
    const args = ['mig', ...NvidiaSmiPort.selector(gpu), '-lgi'];
    const text = await this.list(args, 'list GPU instances', gpu ?? null);
    if (NO_MIG_DEVICES.test(text)) return [];
    return this.parse('list GPU instances', gpu ?? null, () => parseLgi(text, `nvidia-smi ${args.join(' ')}`)).map((r) => ({
      gpu: r.gpu,
      id: r.instanceId,
      profile: r.name,
      profileId: r.profileId,
      start: r.placement.start,
      size: r.placement.size,
    }));
  }

  async listComputeInstances(gpu?: number): Promise<ComputeInstanceInfo[]> {
    const args = ['mig', ...NvidiaSmiPort.selector(gpu), '-lci'];
    const text = await this.list(args, 'list compute instances', gpu ?? null);
    if (NO_MIG_DEVICES.test(text)) return [];
    const rows = this.parse('list compute instances', gpu ?? null, () => parseLci(text, `nvidia-smi ${args.join(' ')}`));
    if (rows.length === 0) return [];
    // MIG device UUIDs: `-L` lists them by device index; `-q -x` maps device index to GI/CI
    // (old drivers also print the GI/CI inside the UUID, MIG-GPU-<uuid>/<gi>/<ci>).
    const [listText, xmlText] = await Promise.all([this.list(['-L'], 'list MIG devices', null), this.queryXml('list MIG devices')]);
    const gpus = this.parse('list MIG devices', null, () => parseListGpus(listText));
    const details = xmlText === null ? [] : this.parse('list MIG devices', null, () => parseQueryXml(xmlText));
    const uuidOf = (g: number, gi: number, ci: number): string => {
      const entry = gpus.find((x) => x.index === g);
      const direct = entry?.migDevices.find((d) => d.gpuInstanceId === gi && d.computeInstanceId === ci);
      if (direct) return direct.uuid;
      const detail = details.find((x) => entry !== undefined && x.uuid === entry.uuid) ?? details[g];
      const device = detail?.migDevices.find((d) => d.gpuInstanceId === gi && d.computeInstanceId === ci);
      return device === undefined ? '' : (entry?.migDevices.find((d) => d.index === device.index)?.uuid ?? '');
    };
    return rows.map((r) => ({
      gpu: r.gpu,
      gpuInstanceId: r.gpuInstanceId,
      id: r.instanceId,
      profile: r.name,
      profileId: r.profileId,
      uuid: uuidOf(r.gpu, r.gpuInstanceId, r.instanceId),
    }));
  }

  async listProcesses(): Promise<GpuProcess[]> {
    // A GPU that no longer answers has no processes to list: the others' are listed.
    const answering = this.listGpus().catch((e: unknown) => {
      if (e instanceof GpuLostError) return [...e.answered];
      throw e;
    });
    const [gpus, text] = await Promise.all([answering, this.queryXml('list processes')]);
    const details = text === null ? [] : this.parse('list processes', null, () => parseQueryXml(text));
    return details.flatMap((d) => {
      const gpu = gpus.find((g) => g.busId.toUpperCase() === d.busId.toUpperCase() || (d.uuid !== '' && g.uuid === d.uuid));
      if (!gpu) return [];
      return d.processes.map((p) => ({
        pid: p.pid,
        name: p.name,
        gpu: gpu.index,
        gpuInstanceId: p.gpuInstanceId,
        computeInstanceId: p.computeInstanceId,
        usedMemoryMiB: p.usedMemoryMiB,
      }));
    });
  }

  async setMigMode(gpu: number, enabled: boolean): Promise<{ pending: boolean }> {
    const args = ['-i', String(gpu), '-mig', enabled ? '1' : '0'];
    const op = `${enabled ? 'enable' : 'disable'} MIG mode`;
    const result = await this.run(args, op, gpu);
    const changes = parseMigModeChange(`${result.stdout}\n${result.stderr}`);
    const change = changes[0];
    if (!change) throw this.failure(result, args, op, gpu);
    return { pending: change.pending };
  }

  async resetGpu(gpu: number): Promise<void> {
    const args = ['-i', String(gpu), '-r'];
    const result = await this.run(args, 'reset', gpu);
    const outcome = parseReset(`${result.stdout}\n${result.stderr}`);
    const blocked = outcome.blocked[0];
    if (blocked) throw new GpuError('reset-blocked', 'reset', gpu, `${blocked.reason}: stop the processes using the GPU first`);
    if (outcome.reset.length === 0 || result.code !== 0) throw this.failure(result, args, 'reset', gpu);
  }

  async createGpuInstance(gpu: number, profile: string, start: number): Promise<GpuInstanceInfo> {
    const args = ['mig', '-i', String(gpu), '-cgi', `${profile}:${start}`];
    const op = `create GPU instance ${profile} at ${start}`;
    const result = await this.run(args, op, gpu);
    const created = parseCreatedGpuInstances(result.stdout)[0];
    if (!created || result.code !== 0) throw this.failure(result, args, op, gpu);
    const listed = (await this.listGpuInstances(gpu)).find((g) => g.id === created.instanceId);
    if (!listed) throw new GpuError('unparseable', op, gpu, `created GPU instance ${created.instanceId} is missing from nvidia-smi mig -lgi`);
    return listed;
  }

  async createComputeInstance(gpu: number, gpuInstanceId: number, profile: string): Promise<ComputeInstanceInfo> {
    const args = ['mig', '-i', String(gpu), '-gi', String(gpuInstanceId), '-cci', profile];
    const op = `create compute instance ${profile} in GPU instance ${gpuInstanceId}`;
    const before = new Set((await this.listComputeInstances(gpu)).filter((c) => c.gpuInstanceId === gpuInstanceId).map((c) => c.id));
    const result = await this.run(args, op, gpu);
    const created = parseCreatedComputeInstances(result.stdout)[0];
    if (!created || result.code !== 0) throw this.failure(result, args, op, gpu);
    const after = (await this.listComputeInstances(gpu)).filter((c) => c.gpuInstanceId === gpuInstanceId);
    // Old drivers print no CI ID in the success line: take the one that was not there before.
    const ci = after.find((c) => (created.instanceId === null ? !before.has(c.id) : c.id === created.instanceId));
    if (!ci) throw new GpuError('unparseable', op, gpu, `created compute instance is missing from nvidia-smi mig -lci`);
    return ci;
  }

  async destroyComputeInstance(gpu: number, gpuInstanceId: number, computeInstanceId: number): Promise<void> {
    const args = ['mig', '-i', String(gpu), '-gi', String(gpuInstanceId), '-ci', String(computeInstanceId), '-dci'];
    const op = `destroy compute instance ${computeInstanceId} of GPU instance ${gpuInstanceId}`;
    const result = await this.run(args, op, gpu);
    if (parseDestroyed(result.stdout).length === 0 || result.code !== 0) throw this.failure(result, args, op, gpu);
  }

  async destroyGpuInstance(gpu: number, gpuInstanceId: number): Promise<void> {
    const args = ['mig', '-i', String(gpu), '-gi', String(gpuInstanceId), '-dgi'];
    const op = `destroy GPU instance ${gpuInstanceId}`;
    const result = await this.run(args, op, gpu);
    if (parseDestroyed(result.stdout).length === 0 || result.code !== 0) throw this.failure(result, args, op, gpu);
  }
}
