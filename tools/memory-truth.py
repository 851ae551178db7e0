#!/usr/bin/env python3
"""What PyTorch itself keeps for a training step: the ground truth for migpool's memory estimator.

For each model, at each batch size given, builds the network with random weights (torchvision's
models with weights=None; BERT and GPT-2 written out below from their published configurations,
nothing downloaded), runs one forward pass and the loss in training mode on the CPU, and counts
  - the parameters (numel of model.parameters()), and
  - the bytes of every tensor autograd saves for the backward pass, as seen by
    torch.autograd.graph.saved_tensors_hooks: each storage counted once (a view saved twice, or an
    in-place ReLU's output saved by the ReLU and by the next convolution, holds one buffer), the
    parameters and buffers left out (they are counted as weights).
Prints one JSON object: {"torch": version, "models": [{"model", "inputSize", "batch", "params",
"savedBytes"}]}. Usage: memory-truth.py [--models a,b,...] [--batches 2,4].

Runs in seconds on two cores: small inputs (64x64 images, 32 tokens) except Inception-v3, whose
auxiliary classifier needs the 299x299 input it was designed for.
"""
import argparse
import json
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class BertLayer(nn.Module):
    """One encoder layer of BERT (Devlin et al. 2019) as Hugging Face's BertLayer computes it
    with eager attention: post-LayerNorm, GELU, dropout 0.1 on attention probabilities and outputs."""

    def __init__(self, h, heads, ff, p):
        super().__init__()
        self.heads, self.p = heads, p
        self.q, self.k, self.v = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.o, self.ln1 = nn.Linear(h, h), nn.LayerNorm(h, eps=1e-12)
        self.ff1, self.ff2, self.ln2 = nn.Linear(h, ff), nn.Linear(ff, h), nn.LayerNorm(h, eps=1e-12)

    def split(self, x):
        b, s, h = x.shape
        return x.view(b, s, self.heads, h // self.heads).permute(0, 2, 1, 3)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(h // self.heads)
        probs = F.dropout(F.softmax(scores, dim=-1), self.p, self.training)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(b, s, h)
        x = self.ln1(F.dropout(self.o(ctx), self.p, self.training) + x)
        y = self.ff2(F.gelu(self.ff1(x)))
        return self.ln2(F.dropout(y, self.p, self.training) + x)


class Bert(nn.Module):
    """BERT with a SQuAD span head (start and end logits), vocabulary 30522, 512 positions, 2 types."""

    def __init__(self, layers, h, heads):
        super().__init__()
        self.word, self.pos, self.segment = nn.Embedding(30522, h), nn.Embedding(512, h), nn.Embedding(2, h)
        self.ln = nn.LayerNorm(h, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(h, heads, 4 * h, 0.1) for _ in range(layers))
        self.pool = nn.Linear(h, h)
        self.qa = nn.Linear(h, 2)

    def forward(self, ids):
        s = ids.shape[1]
        pos = torch.arange(s, device=ids.device).unsqueeze(0)
        x = self.word(ids) + self.pos(pos) + self.segment(torch.zeros_like(ids))
        x = F.dropout(self.ln(x), 0.1, self.training)
        for layer in self.layers:
            x = layer(x)
        _ = torch.tanh(self.pool(x[:, 0]))  # the pooler runs in BertModel; its output is unused by the span head
        return self.qa(x)


class Gpt2Block(nn.Module):
    """One GPT-2 block (Radford et al. 2019; Hugging Face GPT2Block): pre-LayerNorm, causal eager
    attention, tanh-approximated GELU (one fused op), dropout 0.1."""

    def __init__(self, h, heads, p):
        super().__init__()
        self.heads, self.p = heads, p
        self.ln1, self.qkv, self.proj = nn.LayerNorm(h), nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.ln2, self.fc, self.out = nn.LayerNorm(h), nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).permute(0, 2, 1, 3) for t in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(h // self.heads)
        causal = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, device=x.device))
        a = torch.matmul(F.dropout(F.softmax(w, dim=-1), self.p, self.training), v)
        a = a.permute(0, 2, 1, 3).contiguous().view(b, s, h)
        x = x + F.dropout(self.proj(a), self.p, self.training)
        y = self.out(F.gelu(self.fc(self.ln2(x)), approximate='tanh'))
        return x + F.dropout(y, self.p, self.training)


class Gpt2(nn.Module):
    """GPT-2 small: 12 layers, 768 wide, 12 heads, vocabulary 50257, 1024 positions, LM head tied to
    the token embedding."""

    def __init__(self, layers=12, h=768, heads=12):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(50257, h), nn.Embedding(1024, h)
        self.blocks = nn.ModuleList(Gpt2Block(h, heads, 0.1) for _ in range(layers))
        self.ln = nn.LayerNorm(h)

    def forward(self, ids):
        s = ids.shape[1]
        x = F.dropout(self.wte(ids) + self.wpe(torch.arange(s, device=ids.device).unsqueeze(0)), 0.1, self.training)
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln(x), self.wte.weight)


def vision(name, size, **kw):
    return lambda: (getattr(torchvision.models, name)(weights=None, **kw), ('image', size))


def resnet26():
    """ResNet-26: torchvision's ResNet class with two Bottleneck blocks per stage (half of ResNet-50's)."""
    return torchvision.models.resnet.ResNet(torchvision.models.resnet.Bottleneck, [2, 2, 2, 2]), ('image', 64)


MODELS = {
    'resnet18': vision('resnet18', 64),
    'resnet26': resnet26,
    'resnet34': vision('resnet34', 64),
    'resnet50': vision('resnet50', 64),
    'resnet101': vision('resnet101', 64),
    'resnet152': vision('resnet152', 64),
    'wide_resnet101_2': vision('wide_resnet101_2', 64),
    'vgg16': vision('vgg16', 64),
    'inception_v3': vision('inception_v3', 299, init_weights=False),
    'mobilenet_v2': vision('mobilenet_v2', 64),
    'vit_b_16': vision('vit_b_16', 64, image_size=64),
    'bert-base': lambda: (Bert(12, 768, 12), ('tokens', 32)),
    'bert-large': lambda: (Bert(24, 1024, 16), ('tokens', 32)),
    'gpt2': lambda: (Gpt2(), ('tokens', 32)),
}


def storage_key(t):
    """The identity of the buffer under a tensor (its views share it), on any device, meta included."""
    s = t.storage()
    return getattr(s, '_storage', s)._cdata


def measure(model, kind, size, batch, device):
    model.train()
    skip = {storage_key(p) for p in model.parameters()} | {storage_key(b) for b in model.buffers()}
    seen = {}

    def pack(t):
        if t.numel() > 0:
            key = storage_key(t)
            if key not in skip:
                seen[key] = max(seen.get(key, 0), t.storage().nbytes())
        return t

    gen = torch.Generator().manual_seed(0)
    if kind == 'image':
        x = torch.randn(batch, 3, size, size, generator=gen).to(device)
    else:
        x = torch.randint(0, 30000, (batch, size), generator=gen).to(device)
    zeros = lambda n: torch.zeros(n, dtype=torch.long, device=device)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
        logits = out.logits if hasattr(out, 'logits') else out
        if kind == 'image':
            loss = F.cross_entropy(logits, zeros(batch))
            if getattr(out, 'aux_logits', None) is not None:
                loss = loss + 0.4 * F.cross_entropy(out.aux_logits, zeros(batch))
        elif logits.shape[-1] == 2:  # SQuAD: start and end position over the sequence
            start, end = logits.unbind(-1)
            target = zeros(batch)
            loss = (F.cross_entropy(start, target) + F.cross_entropy(end, target)) / 2
        else:  # language modelling: next token over the vocabulary
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), zeros(logits.shape[0] * logits.shape[1]))
    saved = sum(seen.values())
    del loss, out, logits
    return saved


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--models', default=','.join(MODELS))
    ap.add_argument('--batches', default='2,4')
    ap.add_argument('--device', default='cpu', help="cpu, or meta: the same autograd graph without arithmetic (fast)")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(2)
    rows = []
    for name in args.models.split(','):
        if name not in MODELS:
            sys.exit(f'unknown model {name}: use one of {", ".join(MODELS)}')
        model, (kind, size) = MODELS[name]()
        model = model.to(args.device)
        params = sum(p.numel() for p in model.parameters())
        for batch in (int(b) for b in args.batches.split(',')):
            rows.append({'model': name, 'inputSize': size, 'batch': batch, 'params': params, 'savedBytes': measure(model, kind, size, batch, args.device)})
    json.dump({'torch': torch.__version__, 'models': rows}, sys.stdout)
    print()


if __name__ == '__main__':
    main()
