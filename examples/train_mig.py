#!/usr/bin/env python3
"""A PyTorch training job that speaks migpool's bench progress protocol.

migpool bench starts one copy per MIG instance with CUDA_VISIBLE_DEVICES set to that instance
(MIG-<uuid>) and reads lines like {"migpool_samples": 12800, "dataset_size": 50000} from stdout:
the samples trained so far (cumulative) and, optionally, the samples of one epoch. Everything
else on stdout is ignored. Run it alone to try it:

    python3 examples/train_mig.py --model resnet50 --batch-size 128 --image-size 32

and under the bench:

    migpool bench --gpu A100-SXM4-40GB --command "python3 examples/train_mig.py --model resnet50"

It trains on random data (no dataset download), which measures the GPU, not the input pipeline.
"""
import argparse
import json
import sys
import time

import torch
import torchvision


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50", help="any torchvision.models name")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--dataset-size", type=int, default=50000, help="samples per epoch (CIFAR-10: 50000)")
    parser.add_argument("--report-every", type=int, default=5, help="iterations between progress lines")
    parser.add_argument("--amp", action="store_true", help="mixed precision (autocast)")
    args = parser.parse_args()

    if not torch.cuda.is_available():
        sys.exit("no CUDA device visible (CUDA_VISIBLE_DEVICES=%s)" % __import__("os").environ.get("CUDA_VISIBLE_DEVICES"))
    device = torch.device("cuda")
    model = getattr(torchvision.models, args.model)(num_classes=args.classes).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    labels = torch.randint(0, args.classes, (args.batch_size,), device=device)
    scaler = torch.cuda.amp.GradScaler(enabled=args.amp)

    samples = 0
    print(json.dumps({"migpool_samples": 0, "dataset_size": args.dataset_size}), flush=True)
    step = 0
    while True:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", enabled=args.amp):
            loss = loss_fn(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        step += 1
        samples += args.batch_size
        if step % args.report_every == 0:
            torch.cuda.synchronize()
            print(json.dumps({"migpool_samples": samples}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
