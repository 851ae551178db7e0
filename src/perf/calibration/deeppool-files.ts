/** The DeepPool per-layer profiles in data/calibration/ and the model each one profiles. */
export const DEEPPOOL_FILES = [
  { model: 'vgg16', file: 'vggLayerGpuProfileA100.txt', description: 'VGG-16, 224x224 ImageNet-shaped input' },
  { model: 'wrn101-2', file: 'wrnLayerGpuProfileA100V2.txt', description: 'Wide-ResNet-101-2, 224x224 input (profiled at batch 1..32)' },
  { model: 'inception-v3', file: 'inceptionLayerGpuProfileA100.txt', description: 'Inception-v3, 299x299 input' },
  { model: 'resnet34', file: 'resnetLayerGpuProfileA100.txt', description: 'ResNet-34 (33 conv layers), 224x224 input' },
  { model: 'vit', file: 'vitLayerGpuProfileA100.txt', description: 'ViT (6 blocks, dim 512, 4 heads, 16x16 patches), 256x256 input' },
] as const;

export type DeepPoolModel = (typeof DEEPPOOL_FILES)[number]['model'];
