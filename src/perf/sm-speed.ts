import type { GpuModel } from '../mig/types.js';

/**
 * Training speed of one SM relative to an A100 SM, from NVIDIA's datasheet peak dense FP16/BF16
 * Tensor Core throughput per SM at boost clock: (dense TFLOPS / SMs) / (312 / 108), the A100's.
 * Tensor-core matrix products are most of a training step's arithmetic; the work bound by memory
 * bandwidth is carried by the bandwidth term of effectiveCapacity instead. The peak ratio is an
 * upper bound on what a real step gains per SM (a step also runs kernels that are neither), which
 * the memory-bound share tempers.
 */
export interface SmSpeed {
  readonly factor: number;
  readonly confirmed: boolean;
  readonly source: string;
}

const A100_TFLOPS_PER_SM = 312 / 108;
const perSm = (tflops: number, sms: number) => tflops / sms / A100_TFLOPS_PER_SM;

/** Per product where NVIDIA states dense FP16 Tensor TFLOPS and the catalogue has the SM count. */
export const SM_SPEED_BY_GPU: Readonly<Record<string, SmSpeed>> = {
  // A100 datasheet: 312 TFLOPS FP16 Tensor (dense), 108 SMs (A100 whitepaper). The unit.
  'A100-40GB': { factor: 1, confirmed: true, source: 'A100 datasheet: 312 dense FP16 Tensor TFLOPS over 108 SMs (the unit)' },
  'A100-80GB': { factor: 1, confirmed: true, source: 'A100 datasheet: 312 dense FP16 Tensor TFLOPS over 108 SMs (the unit)' },
  // A30 datasheet: 165 TFLOPS FP16 Tensor (330 with sparsity); 56 SMs.
  'A30-24GB': { factor: perSm(165, 56), confirmed: true, source: 'A30 datasheet: 165 dense FP16 Tensor TFLOPS over 56 SMs' },
  // H100 datasheet: SXM 1,979 TFLOPS FP16 Tensor with sparsity (989.4 dense), 132 SMs (H100 whitepaper);
  // PCIe 1,513 with sparsity (756 dense), 114 SMs; NVL 1,671 with sparsity (835.5 dense), 132 SMs.
  'H100-80GB': { factor: perSm(989.4, 132), confirmed: true, source: 'H100 datasheet: SXM 989.4 dense FP16 Tensor TFLOPS over 132 SMs' },
  'H100-PCIE-80GB': { factor: perSm(756, 114), confirmed: true, source: 'H100 datasheet: PCIe 756 dense FP16 Tensor TFLOPS over 114 SMs' },
  'H100-NVL-94GB': { factor: perSm(835.5, 132), confirmed: true, source: 'H100 datasheet: NVL 835.5 dense FP16 Tensor TFLOPS over 132 SMs' },
  // H200 datasheet: 1,979 TFLOPS FP16 Tensor with sparsity, the H100 SXM's GH100 at the same clocks.
  'H200-141GB': { factor: perSm(989.4, 132), confirmed: true, source: 'H200 datasheet: 989.4 dense FP16 Tensor TFLOPS over 132 SMs' },
};

/**
 * Per architecture, for products without their own entry: Ampere as the A100; Hopper as the H100
 * SXM (whitepaper: twice the A100 SM's MMA rate clock for clock, at a higher boost clock);
 * Blackwell from the HGX B200's 18 PFLOPS FP16 with sparsity for 8 GPUs (2.25 dense each) over
 * 148 SMs per B200 (NVIDIA's Blackwell announcements; the catalogue has no SM count): unconfirmed.
 */
export const SM_SPEED_BY_ARCHITECTURE: Readonly<Record<GpuModel['architecture'], SmSpeed>> = {
  Ampere: { factor: 1, confirmed: true, source: 'Ampere: as the A100' },
  Hopper: { factor: perSm(989.4, 132), confirmed: true, source: 'Hopper: as the H100 SXM (989.4 dense FP16 Tensor TFLOPS over 132 SMs)' },
  Blackwell: { factor: perSm(2250, 148), confirmed: false, source: 'Blackwell: B200 2,250 dense FP16 Tensor TFLOPS over 148 SMs (SM count not in the catalogue)' },
};

/** How fast one SM of `gpu` trains relative to an A100 SM, and where the figure comes from. */
export function smSpeed(gpu: GpuModel): SmSpeed {
  return SM_SPEED_BY_GPU[gpu.name] ?? SM_SPEED_BY_ARCHITECTURE[gpu.architecture];
}
