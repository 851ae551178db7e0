import { MigpoolError } from '../../errors.js';

/** A MIG device of `nvidia-smi -q -x`: its index (the `Device N` of `-L`) and its GI/CI IDs. */
export interface XmlMigDevice {
  index: number;
  gpuInstanceId: number;
  computeInstanceId: number;
}

/** A process of `nvidia-smi -q -x`; GI/CI IDs are null (`N/A`) when the GPU is not in MIG mode. */
export interface XmlProcess {
  pid: number;
  type: string;
  name: string;
  gpuInstanceId: number | null;
  computeInstanceId: number | null;
  usedMemoryMiB: number;
}

/** One `<gpu>` of `nvidia-smi -q -x`, the fields migpool reads. */
export interface XmlGpu {
  busId: string;
  productName: string;
  uuid: string;
  /** `0x20B010DE`, normalised from the XML's `20B010DE`. */
  pciDeviceId: string | null;
  memoryMiB: number | null;
  migMode: { current: string; pending: string } | null;
  migDevices: XmlMigDevice[];
  processes: XmlProcess[];
}

function tag(block: string, name: string): string | null {
  const m = new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(block);
  return m ? (m[1] ?? '').trim() : null;
}

function blocks(text: string, name: string): string[] {
  return [...text.matchAll(new RegExp(`<${name}(?:\\s[^>]*)?>([\\s\\S]*?)</${name}>`, 'g'))].map((m) => m[1] ?? '');
}

function idOrNull(text: string | null): number | null {
  return text !== null && /^\d+$/.test(text) ? Number(text) : null;
}

function mib(text: string | null): number | null {
  const m = text === null ? null : /^(\d+)\s*MiB$/.exec(text);
  return m ? Number(m[1]) : null;
}

/**
 * Parses `nvidia-smi -q -x` (the nvsmi_device XML, DTD v11 and later): per GPU its product, UUID,
 * PCI IDs, memory, MIG mode, MIG devices (index to GI/CI) and processes (with GI/CI). Elements it
 * does not use are ignored, so newer drivers' additions do not matter. Real capture:
 * test/fixtures/nvidia-smi/a100-sxm4-40gb_q-x-mig-2-devices_netdata-go.d.plugin.txt.
 */
export function parseQueryXml(text: string, command = 'nvidia-smi -q -x'): XmlGpu[] {
  if (!/<nvidia_smi_log>/.test(text)) {
    const first = text.split('\n').find((l) => l.trim().length > 0) ?? '';
    throw new MigpoolError('DEVICE', `${command}: unexpected output, not nvidia-smi XML: '${first.trim().slice(0, 200)}'`);
  }
  return [...text.matchAll(/<gpu\s+id="([^"]+)"\s*>([\s\S]*?)<\/gpu>/g)].map((m) => {
    const busId = m[1] ?? '';
    const body = m[2] ?? '';
    const own = body.replace(/<mig_devices>[\s\S]*?<\/mig_devices>/, '').replace(/<processes>[\s\S]*?<\/processes>/, '').replace(/<accounted_processes>[\s\S]*?<\/accounted_processes>/, '');
    const migModeBlock = tag(own, 'mig_mode');
    const current = migModeBlock === null ? null : tag(migModeBlock, 'current_mig');
    const pending = migModeBlock === null ? null : tag(migModeBlock, 'pending_mig');
    const pci = tag(own, 'pci') ?? '';
    const deviceId = tag(pci, 'pci_device_id');
    const fb = tag(own, 'fb_memory_usage') ?? '';
    const migDevicesBlock = tag(body, 'mig_devices') ?? '';
    const processesBlock = tag(body, 'processes') ?? '';
    return {
      busId,
      productName: tag(own, 'product_name') ?? '',
      uuid: tag(own, 'uuid') ?? '',
      pciDeviceId: deviceId && /^(0x)?[0-9A-Fa-f]{8}$/.test(deviceId) ? `0x${deviceId.replace(/^0x/i, '').toUpperCase()}` : null,
      memoryMiB: mib(tag(fb, 'total')),
      migMode: current && pending && current !== 'N/A' ? { current, pending } : null,
      migDevices: blocks(migDevicesBlock, 'mig_device').flatMap((d) => {
        const index = idOrNull(tag(d, 'index'));
        const gi = idOrNull(tag(d, 'gpu_instance_id'));
        const ci = idOrNull(tag(d, 'compute_instance_id'));
        return index === null || gi === null || ci === null ? [] : [{ index, gpuInstanceId: gi, computeInstanceId: ci }];
      }),
      processes: blocks(processesBlock, 'process_info').flatMap((p) => {
        const pid = idOrNull(tag(p, 'pid'));
        if (pid === null) return [];
        return [
          {
            pid,
            type: tag(p, 'type') ?? '',
            name: tag(p, 'process_name') ?? '',
            gpuInstanceId: idOrNull(tag(p, 'gpu_instance_id')),
            computeInstanceId: idOrNull(tag(p, 'compute_instance_id')),
            usedMemoryMiB: mib(tag(p, 'used_memory')) ?? 0,
          },
        ];
      }),
    };
  });
}
