#!/usr/bin/env python3
"""A PyTorch training job that speaks migpool's progress protocol and survives being moved.

Progress: it prints lines like {"migpool_samples": 12800, "dataset_size": 50000,
"migpool_total": 100000} on stdout: the samples trained so far (cumulative, across attempts),
optionally the samples of one epoch, and, with --total-samples, how many it will train in all
(so that `migpool jobs` shows progress and an ETA). Everything else on stdout is ignored.

Preemption: when migpool stops the job (SIGTERM, then SIGKILL after the spec's killGracePeriod),
it saves model, optimizer and sample count to $MIGPOOL_CHECKPOINT_DIR/checkpoint.pt (written to a
temporary file, then renamed) and exits; the next attempt finds that file and resumes from it.
Submit it with `preemptible: true` so that migpool may move it. It also checkpoints every
--checkpoint-every seconds, so that a SIGKILL loses at most that much.

Run it alone:

    python3 examples/train_mig.py --model resnet50 --batch-size 128 --image-size 32

under the bench:

    migpool bench --gpu A100-SXM4-40GB --command "python3 examples/train_mig.py --model resnet50"

or as a job of `migpool serve` (CPU when no GPU is visible: --device cpu):

    name: resnet18-cifar
    command: [python3, examples/train_mig.py, --model, resnet18, --total-samples, "500000"]
    resources: {profile: 1g.5gb}
    preemptible: true

It trains on random data (no dataset download), which measures the GPU, not the input pipeline.
"""
import argparse
import json
import os
import signal
import sys
import time

import torch
import torchvision


class Stop(Exception):
    """Raised in the training loop once SIGTERM has arrived."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50", help="any torchvision.models name")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--dataset-size", type=int, default=50000, help="samples per epoch (CIFAR-10: 50000)")
    parser.add_argument("--report-every", type=int, default=5, help="iterations between progress lines")
    parser.add_argument("--total-samples", type=int, default=0, help="stop after this many samples (0: train until stopped)")
    parser.add_argument("--checkpoint-every", type=float, default=60.0, help="seconds between periodic checkpoints")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: train on the CPU (tests, no GPU)")
    parser.add_argument("--amp", action="store_true", help="mixed precision (autocast, cuda only)")
    args = parser.parse_args()

    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("no CUDA device visible (CUDA_VISIBLE_DEVICES=%s); pass --device cpu to train on the CPU" % os.environ.get("CUDA_VISIBLE_DEVICES"))
    device = torch.device(args.device)
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(num_classes=args.classes).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    labels = torch.randint(0, args.classes, (args.batch_size,), device=device)
    amp = args.amp and args.device == "cuda"
    scaler = torch.cuda.amp.GradScaler(enabled=amp)

    ckpt_dir = os.environ.get("MIGPOOL_CHECKPOINT_DIR")
    ckpt = os.path.join(ckpt_dir, "checkpoint.pt") if ckpt_dir else None
    samples = 0
    if ckpt and os.path.exists(ckpt):
        state = torch.load(ckpt, map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        samples = int(state["samples"])
        print("resumed from %s at %d samples (attempt %s)" % (ckpt, samples, os.environ.get("MIGPOOL_ATTEMPT", "?")), file=sys.stderr, flush=True)

    def save() -> None:
        if not ckpt:
            return
        tmp = ckpt + ".tmp"
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "samples": samples}, tmp)
        os.replace(tmp, ckpt)

    stopping = {"now": False}

    def on_term(_signum, _frame) -> None:
        stopping["now"] = True

    signal.signal(signal.SIGTERM, on_term)

    def report() -> None:
        line = {"migpool_samples": samples, "dataset_size": args.dataset_size}
        if args.total_samples > 0:
            line["migpool_total"] = args.total_samples
        print(json.dumps(line), flush=True)

    report()
    step = 0
    last_save = time.monotonic()
    while args.total_samples <= 0 or samples < args.total_samples:
        if stopping["now"]:
            # Checkpoint at a step boundary, then end: migpool requeues the job.
            save()
            report()
            print("stopped by SIGTERM at %d samples; checkpoint saved" % samples, file=sys.stderr, flush=True)
            sys.exit(143)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(args.device, enabled=amp):
            loss = loss_fn(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        step += 1
        samples += args.batch_size
        if args.total_samples > 0:
            samples = min(samples, args.total_samples)
        if step % args.report_every == 0:
            if args.device == "cuda":
                torch.cuda.synchronize()
            report()
        if ckpt and time.monotonic() - last_save >= args.checkpoint_every:
            save()
            last_save = time.monotonic()
    save()
    report()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
