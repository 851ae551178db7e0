/**
 * The torchvision convolutional networks, layer by layer as torchvision 0.14 builds them
 * (torchvision/models/{resnet,vgg,inception,mobilenetv2}.py), run through the dry-run Trace.
 */
import type { Tensor, Trace } from './trace.js';

/** conv (no bias) + batch norm + in-place ReLU: torchvision's conv-bn-relu unit. */
function convBnRelu(t: Trace, x: Tensor, out: number, k: number | readonly [number, number], o: { stride?: number; pad?: number | readonly [number, number]; groups?: number; relu6?: boolean } = {}): Tensor {
  const kk: [number, number] = typeof k === 'number' ? [k, k] : [k[0], k[1]];
  const pad: [number, number] = o.pad === undefined ? [0, 0] : typeof o.pad === 'number' ? [o.pad, o.pad] : [o.pad[0], o.pad[1]];
  const y = t.batchNorm(t.conv(x, out, kk, { stride: o.stride ?? 1, pad, groups: o.groups ?? 1 }));
  return o.relu6 ? t.relu6(y) : t.reluInPlace(y);
}

function classify(t: Trace, features: Tensor, classes: number, dropout = 0): Tensor {
  const pooled = t.adaptiveAvgPool(features, 1);
  const flat = t.view(pooled, [pooled.shape[0] ?? 0, pooled.shape[1] ?? 0]);
  return t.linear(t.dropout(flat, dropout), classes);
}

/** ResNet of He et al. 2016: BasicBlock (expansion 1) or Bottleneck (expansion 4), `widthFactor` 2 for Wide-ResNet. */
export function resnet(t: Trace, x: Tensor, blocks: readonly number[], bottleneck: boolean, widthFactor = 1): Tensor {
  const expansion = bottleneck ? 4 : 1;
  let y = convBnRelu(t, x, 64, 7, { stride: 2, pad: 3 });
  y = t.maxPool(y, 3, 2, 1);
  let inplanes = 64;
  blocks.forEach((count, stage) => {
    const planes = 64 * 2 ** stage;
    for (let i = 0; i < count; i++) {
      const stride = i === 0 && stage > 0 ? 2 : 1;
      const identityIn = y;
      let out: Tensor;
      if (bottleneck) {
        const width = planes * widthFactor;
        out = convBnRelu(t, y, width, 1);
        out = convBnRelu(t, out, width, 3, { stride, pad: 1 });
        out = t.batchNorm(t.conv(out, planes * expansion, [1, 1]));
      } else {
        out = convBnRelu(t, y, planes, 3, { stride, pad: 1 });
        out = t.batchNorm(t.conv(out, planes, [3, 3], { pad: [1, 1] }));
      }
      if (stride !== 1 || inplanes !== planes * expansion) t.batchNorm(t.conv(identityIn, planes * expansion, [1, 1], { stride }));
      // `out += identity` writes into the last batch norm's output, which the in-place ReLU then saves.
      y = t.reluInPlace(out);
      inplanes = planes * expansion;
    }
  });
  return classify(t, y, 1000);
}

/** VGG-16 (configuration D of Simonyan and Zisserman 2015), without batch norm, as torchvision's vgg16. */
export function vgg16(t: Trace, x: Tensor): Tensor {
  const cfg: readonly (number | 'M')[] = [64, 64, 'M', 128, 128, 'M', 256, 256, 256, 'M', 512, 512, 512, 'M', 512, 512, 512, 'M'];
  let y = x;
  for (const c of cfg) y = c === 'M' ? t.maxPool(y, 2, 2) : t.reluInPlace(t.conv(y, c, [3, 3], { pad: [1, 1], bias: true }));
  const pooled = t.adaptiveAvgPool(y, 7);
  let h = t.view(pooled, [pooled.shape[0] ?? 0, 512 * 7 * 7]);
  h = t.dropout(t.reluInPlace(t.linear(h, 4096)), 0.5);
  h = t.dropout(t.reluInPlace(t.linear(h, 4096)), 0.5);
  return t.linear(h, 1000);
}

/** MobileNetV2 (Sandler et al. 2018), width 1.0, as torchvision's mobilenet_v2 (its Conv2dNormActivation builds ReLU6 out of place). */
export function mobilenetV2(t: Trace, x: Tensor): Tensor {
  const settings: readonly (readonly [number, number, number, number])[] = [
    [1, 16, 1, 1],
    [6, 24, 2, 2],
    [6, 32, 3, 2],
    [6, 64, 4, 2],
    [6, 96, 3, 1],
    [6, 160, 3, 2],
    [6, 320, 1, 1],
  ];
  let y = convBnRelu(t, x, 32, 3, { stride: 2, pad: 1, relu6: true });
  let inp = 32;
  for (const [expand, c, n, s] of settings) {
    for (let i = 0; i < n; i++) {
      const stride = i === 0 ? s : 1;
      const hidden = Math.round(inp * expand);
      let h = y;
      if (expand !== 1) h = convBnRelu(t, h, hidden, 1, { relu6: true });
      h = convBnRelu(t, h, hidden, 3, { stride, pad: 1, groups: hidden, relu6: true });
      h = t.batchNorm(t.conv(h, c, [1, 1]));
      y = stride === 1 && inp === c ? t.add(y, h) : h;
      inp = c;
    }
  }
  y = convBnRelu(t, y, 1280, 1, { relu6: true });
  return classify(t, y, 1000, 0.2);
}

/** torchvision's BasicConv2d: conv (no bias) + batch norm (eps 0.001) + in-place ReLU. */
const bc = convBnRelu;

function inceptionA(t: Trace, x: Tensor, poolFeatures: number): Tensor {
  const b1 = bc(t, x, 64, 1);
  const b5 = bc(t, bc(t, x, 48, 1), 64, 5, { pad: 2 });
  const b3 = bc(t, bc(t, bc(t, x, 64, 1), 96, 3, { pad: 1 }), 96, 3, { pad: 1 });
  const bp = bc(t, t.avgPool(x, 3, 1, 1), poolFeatures, 1);
  return t.cat([b1, b5, b3, bp], 1);
}

function inceptionB(t: Trace, x: Tensor): Tensor {
  const b3 = bc(t, x, 384, 3, { stride: 2 });
  const bd = bc(t, bc(t, bc(t, x, 64, 1), 96, 3, { pad: 1 }), 96, 3, { stride: 2 });
  return t.cat([b3, bd, t.maxPool(x, 3, 2)], 1);
}

function inceptionC(t: Trace, x: Tensor, c7: number): Tensor {
  const b1 = bc(t, x, 192, 1);
  let b7 = bc(t, x, c7, 1);
  b7 = bc(t, b7, c7, [1, 7], { pad: [0, 3] });
  b7 = bc(t, b7, 192, [7, 1], { pad: [3, 0] });
  let bd = bc(t, x, c7, 1);
  bd = bc(t, bd, c7, [7, 1], { pad: [3, 0] });
  bd = bc(t, bd, c7, [1, 7], { pad: [0, 3] });
  bd = bc(t, bd, c7, [7, 1], { pad: [3, 0] });
  bd = bc(t, bd, 192, [1, 7], { pad: [0, 3] });
  const bp = bc(t, t.avgPool(x, 3, 1, 1), 192, 1);
  return t.cat([b1, b7, bd, bp], 1);
}

function inceptionD(t: Trace, x: Tensor): Tensor {
  const b3 = bc(t, bc(t, x, 192, 1), 320, 3, { stride: 2 });
  let b7 = bc(t, x, 192, 1);
  b7 = bc(t, b7, 192, [1, 7], { pad: [0, 3] });
  b7 = bc(t, b7, 192, [7, 1], { pad: [3, 0] });
  b7 = bc(t, b7, 192, 3, { stride: 2 });
  return t.cat([b3, b7, t.maxPool(x, 3, 2)], 1);
}

function inceptionE(t: Trace, x: Tensor): Tensor {
  const b1 = bc(t, x, 320, 1);
  const b3 = bc(t, x, 384, 1);
  const b3cat = t.cat([bc(t, b3, 384, [1, 3], { pad: [0, 1] }), bc(t, b3, 384, [3, 1], { pad: [1, 0] })], 1);
  const bd = bc(t, bc(t, x, 448, 1), 384, 3, { pad: 1 });
  const bdcat = t.cat([bc(t, bd, 384, [1, 3], { pad: [0, 1] }), bc(t, bd, 384, [3, 1], { pad: [1, 0] })], 1);
  const bp = bc(t, t.avgPool(x, 3, 1, 1), 192, 1);
  return t.cat([b1, b3cat, bdcat, bp], 1);
}

/** Inception-v3 (Szegedy et al. 2016) with its auxiliary classifier, as torchvision trains it. */
export function inceptionV3(t: Trace, x: Tensor): Tensor {
  let y = bc(t, x, 32, 3, { stride: 2 });
  y = bc(t, y, 32, 3);
  y = bc(t, y, 64, 3, { pad: 1 });
  y = t.maxPool(y, 3, 2);
  y = bc(t, y, 80, 1);
  y = bc(t, y, 192, 3);
  y = t.maxPool(y, 3, 2);
  y = inceptionA(t, y, 32);
  y = inceptionA(t, y, 64);
  y = inceptionA(t, y, 64);
  y = inceptionB(t, y);
  y = inceptionC(t, y, 128);
  y = inceptionC(t, y, 160);
  y = inceptionC(t, y, 160);
  y = inceptionC(t, y, 192);
  const aux = bc(t, bc(t, t.avgPool(y, 5, 3), 128, 1), 768, 5);
  t.crossEntropy(classify(t, aux, 1000), t.tensor([x.shape[0] ?? 0], 8));
  y = inceptionD(t, y);
  y = inceptionE(t, y);
  y = inceptionE(t, y);
  return classify(t, y, 1000, 0.5);
}
