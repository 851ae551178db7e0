/**
 * Peak memory bandwidth of each catalogued GPU family (src/mig/catalog), GB/s, as NVIDIA's
 * datasheets state it. `confirmed: false` marks a figure the sources at hand did not confirm; it is
 * used all the same, and a prediction on that GPU says so.
 */
export interface BandwidthEntry {
  readonly gbPerSecond: number;
  readonly confirmed: boolean;
  readonly source: string;
}

export const MEMORY_BANDWIDTH: Readonly<Record<string, BandwidthEntry>> = {
  // A30 datasheet: 24 GB HBM2, 933 GB/s. Not confirmed by a source found here.
  'A30-24GB': { gbPerSecond: 933, confirmed: false, source: 'NVIDIA A30 datasheet (figure not re-checked)' },
  // A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4): 40GB HBM2 1,555 GB/s (SXM and PCIe);
  // also the A100-40GB product briefs, TechPowerUp and glennklockwood.com/garden/processors/A100.
  'A100-40GB': { gbPerSecond: 1555, confirmed: true, source: 'NVIDIA A100 datasheet: 40GB HBM2, 1,555 GB/s' },
  // Same datasheet: 80GB HBM2e 1,935 GB/s (PCIe), 2,039 GB/s (SXM). One family in the catalogue: the SXM figure.
  'A100-80GB': { gbPerSecond: 2039, confirmed: true, source: 'NVIDIA A100 datasheet: 80GB SXM 2,039 GB/s (PCIe 1,935 GB/s)' },
  // H100 datasheet: H100 SXM 3.35 TB/s, H100 NVL 3.9 TB/s; H100 PCIe product brief PB-11133-001: "greater than 2,000 GB/s".
  'H100-80GB': { gbPerSecond: 3350, confirmed: true, source: 'NVIDIA H100 datasheet: H100 SXM 3.35 TB/s' },
  'H100-PCIE-80GB': { gbPerSecond: 2000, confirmed: true, source: 'NVIDIA H100 PCIe product brief PB-11133-001: 2,000 GB/s' },
  'H100-NVL-94GB': { gbPerSecond: 3900, confirmed: true, source: 'NVIDIA H100 datasheet: H100 NVL 3.9 TB/s' },
  // GH200 Grace Hopper with 96GB HBM3: 4 TB/s (NVIDIA GH200 datasheet; announced as "96GB HBM3 at 4 TB/s").
  'H100-96GB': { gbPerSecond: 4000, confirmed: true, source: 'NVIDIA GH200 datasheet: 96GB HBM3, 4 TB/s' },
  // H20: 96GB HBM3, 4.0 TB/s (NVIDIA's China-market H20 specification, reported by the trade press).
  'H20-96GB': { gbPerSecond: 4000, confirmed: true, source: 'NVIDIA H20 specification: 96GB HBM3, 4.0 TB/s' },
  // H200 datasheet: 141GB HBM3e, 4.8 TB/s (SXM and NVL).
  'H200-141GB': { gbPerSecond: 4800, confirmed: true, source: 'NVIDIA H200 datasheet: 141GB HBM3e, 4.8 TB/s' },
  // GH200 with 144GB HBM3e: 4.9 TB/s in the GH200 datasheet; announced in Aug 2023 as "141GB HBM3e at 5 TB/s".
  'GH200-144GB': { gbPerSecond: 4900, confirmed: false, source: 'NVIDIA GH200 datasheet: 144GB HBM3e, 4.9 TB/s (not re-checked; announced as 5 TB/s)' },
  // DGX/HGX B200: 64 TB/s for 8 GPUs, 8 TB/s each; GB200 NVL72: 576 TB/s for 72 GPUs, 8 TB/s each.
  'B200-180GB': { gbPerSecond: 8000, confirmed: true, source: 'NVIDIA DGX/HGX B200: 8 TB/s per GPU' },
  'GB200-186GB': { gbPerSecond: 8000, confirmed: true, source: 'NVIDIA GB200 NVL72: 576 TB/s over 72 GPUs, 8 TB/s per GPU' },
  // HGX B300: "up to 8 TB/s per GPU"; GB300 NVL72: 20 TB HBM at 576 TB/s over 72 GPUs.
  'B300-288GB': { gbPerSecond: 8000, confirmed: true, source: 'NVIDIA HGX B300: up to 8 TB/s per GPU' },
  'GB300-288GB': { gbPerSecond: 8000, confirmed: true, source: 'NVIDIA GB300 NVL72: 576 TB/s over 72 GPUs, 8 TB/s per GPU' },
  // RTX PRO 6000 Blackwell (all editions): 96GB GDDR7, 512-bit, 1,792 GB/s.
  'RTX-PRO-6000': { gbPerSecond: 1792, confirmed: true, source: 'NVIDIA RTX PRO 6000 Blackwell: 96GB GDDR7, 1,792 GB/s' },
};

/** The A100-40GB figure: the unit of the model's bandwidth capacity (see resources.ts). */
export const A100_40GB_BANDWIDTH = 1555;
