import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseQueryXml } from './query-xml.js';

const fixture = (name: string) => readFileSync(new URL(`../../../test/fixtures/nvidia-smi/${name}`, import.meta.url), 'utf8');

describe('nvidia-smi -q -x', () => {
  it('reads a real A100-SXM4-40GB with two MIG devices (R510)', () => {
    const [gpu, ...rest] = parseQueryXml(fixture('a100-sxm4-40gb_q-x-mig-2-devices_netdata-go.d.plugin.txt'));
    expect(rest).toEqual([]);
    expect(gpu).toMatchObject({
      busId: '00000000:00:04.0',
      productName: 'NVIDIA A100-SXM4-40GB',
      uuid: 'GPU-27b94a00-ed54-5c24-b1fd-1054085de32a',
      pciDeviceId: '0x20B010DE',
      memoryMiB: 40960,
      migMode: { current: 'Enabled', pending: 'Enabled' },
      migDevices: [
        { index: 0, gpuInstanceId: 1, computeInstanceId: 0 },
        { index: 1, gpuInstanceId: 2, computeInstanceId: 0 },
      ],
      processes: [],
    });
  });

  it('reads processes in the tab-indented form of newer drivers, N/A instance IDs as null', () => {
    // Shape of the <processes> block as published from a real R5xx machine (see query-xml.ts).
    const text = `<?xml version="1.0" ?>\n<nvidia_smi_log>\n\t<gpu id="00000000:01:00.0">\n\t\t<product_name>NVIDIA H100 80GB HBM3</product_name>\n\t\t<mig_mode>\n\t\t\t<current_mig>Enabled</current_mig>\n\t\t\t<pending_mig>Enabled</pending_mig>\n\t\t</mig_mode>\n\t\t<uuid>GPU-1</uuid>\n\t\t<processes>\n\t\t\t<process_info>\n\t\t\t\t<gpu_instance_id>3</gpu_instance_id>\n\t\t\t\t<compute_instance_id>0</compute_instance_id>\n\t\t\t\t<pid>200870</pid>\n\t\t\t\t<type>C</type>\n\t\t\t\t<process_name></process_name>\n\t\t\t\t<used_memory>958 MiB</used_memory>\n\t\t\t</process_info>\n\t\t\t<process_info>\n\t\t\t\t<gpu_instance_id>N/A</gpu_instance_id>\n\t\t\t\t<compute_instance_id>N/A</compute_instance_id>\n\t\t\t\t<pid>1688347</pid>\n\t\t\t\t<type>C</type>\n\t\t\t\t<process_name>python</process_name>\n\t\t\t\t<used_memory>310 MiB</used_memory>\n\t\t\t</process_info>\n\t\t</processes>\n\t</gpu>\n</nvidia_smi_log>\n`;
    const [gpu] = parseQueryXml(text);
    expect(gpu?.processes).toEqual([
      { pid: 200870, type: 'C', name: '', gpuInstanceId: 3, computeInstanceId: 0, usedMemoryMiB: 958 },
      { pid: 1688347, type: 'C', name: 'python', gpuInstanceId: null, computeInstanceId: null, usedMemoryMiB: 310 },
    ]);
    expect(gpu?.pciDeviceId).toBeNull();
  });

  it('refuses output that is not nvidia-smi XML, quoting it', () => {
    expect(() => parseQueryXml('NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver.\n')).toThrow(
      /nvidia-smi -q -x: unexpected output, not nvidia-smi XML: 'NVIDIA-SMI has failed/,
    );
  });
});
