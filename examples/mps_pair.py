#!/usr/bin/env python3
"""Two copies of a training job on one whole GPU through CUDA MPS, one at below-normal priority.

Measures what `migpool serve` relies on when it runs a background job beside a foreground one:
the foreground's samples/s alone, then beside a background copy, and the total throughput of the
pair. The job must print migpool's progress lines ({"migpool_samples": N} on stdout, as
examples/train_mig.py does); samples/s are measured from them, after a warm-up.

    python3 examples/mps_pair.py --seconds 60 -- python3 examples/train_mig.py --model resnet50 --batch-size 128 --image-size 32

Steps: start an MPS control daemon for the GPU (its own pipe and log directories in a temporary
folder, CUDA_VISIBLE_DEVICES set to the GPU's UUID); run the job alone as a normal-priority
client (CUDA_MPS_CLIENT_PRIORITY=0) for --warmup + --seconds; then two copies together, the
second at below-normal priority (CUDA_MPS_CLIENT_PRIORITY=1); stop the daemon (`quit`). It never
changes the GPU's MIG mode, compute mode or any other setting: it refuses a GPU with MIG on
unless --device names a device. Prints one JSON object (--json) or a few lines.

Needs: nvidia-smi and nvidia-cuda-mps-control on PATH (the NVIDIA driver), the job's own needs.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time


def first_gpu() -> str:
    """The UUID of GPU 0 when its MIG mode is off; exits with a message otherwise."""
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=uuid,mig.mode.current", "--format=csv,noheader", "-i", "0"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    uuid, _, mig = (x.strip() for x in out.partition(","))
    if mig.lower() == "enabled":
        sys.exit("GPU 0 (%s) has MIG on; this run is for a whole GPU and never changes MIG mode: "
                 "pass --device with a GPU whose MIG mode is off (or a MIG device UUID)" % uuid)
    return uuid


class Client:
    """One job as an MPS client: its progress lines, timed as they arrive."""

    def __init__(self, command, env, priority):
        env = dict(env, CUDA_MPS_CLIENT_PRIORITY=str(priority))
        self.reports = []  # (seconds since start, samples)
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            if not line.startswith("{") or "migpool_samples" not in line:
                continue
            try:
                samples = json.loads(line)["migpool_samples"]
            except (ValueError, KeyError):
                continue
            self.reports.append((time.monotonic() - self.t0, samples))

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.reader.join(timeout=5)

    def rate(self, start, end):
        """Samples/s between the first report at or after `start` s and the last at or before `end` s."""
        window = [r for r in self.reports if start <= r[0] <= end]
        if len(window) < 2 or window[-1][0] <= window[0][0]:
            return None
        return (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0])


def run(command, env, priorities, warmup, seconds):
    """Runs one client per priority for warmup + seconds; their samples/s after the warm-up."""
    clients = [Client(command, env, p) for p in priorities]
    try:
        deadline = time.monotonic() + warmup + seconds
        while time.monotonic() < deadline:
            if any(c.proc.poll() is not None for c in clients):
                sys.exit("a copy of the job ended early (exit status %s); run it alone to see why" % [c.proc.poll() for c in clients])
            time.sleep(0.1)
    finally:
        for c in clients:
            c.stop()
    return [c.rate(warmup, warmup + seconds) for c in clients]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", help="GPU (or MIG device) UUID; default GPU 0, whose MIG mode must be off")
    parser.add_argument("--seconds", type=float, default=60.0, help="seconds measured in each phase, after the warm-up")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds of each phase not measured (start-up, first iterations)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the job's command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the job's command after --, e.g. -- python3 examples/train_mig.py --model resnet50")
    device = args.device or first_gpu()

    folder = tempfile.mkdtemp(prefix="migpool-mps-pair-")
    pipe, log = os.path.join(folder, "pipe"), os.path.join(folder, "log")
    os.makedirs(pipe)
    os.makedirs(log)
    # The daemon and its clients share the pipe and log directories and name the device by UUID
    # (NVIDIA's MPS documentation, "Appendix: Environment Variables").
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=device, CUDA_MPS_PIPE_DIRECTORY=pipe, CUDA_MPS_LOG_DIRECTORY=log)
    env.pop("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", None)
    subprocess.run(["nvidia-cuda-mps-control", "-d"], env=env, check=True)
    try:
        (alone,) = run(command, env, [0], args.warmup, args.seconds)
        foreground, background = run(command, env, [0, 1], args.warmup, args.seconds)
    finally:
        subprocess.run(["nvidia-cuda-mps-control"], env=env, input="quit\n", text=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)
    if None in (alone, foreground, background):
        sys.exit("too few progress lines in the measured %g s: lengthen --seconds, or have the job report more often" % args.seconds)
    result = {
        "device": device,
        "command": command,
        "seconds": args.seconds,
        "warmup": args.warmup,
        "aloneSamplesPerSecond": alone,
        "foregroundSamplesPerSecond": foreground,
        "backgroundSamplesPerSecond": background,
        "foregroundSlowdown": alone / foreground,
        "totalOverAlone": (foreground + background) / alone,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print("alone (priority 0):          %.1f samples/s" % alone)
        print("foreground beside background: %.1f samples/s (slowdown %.3fx)" % (foreground, result["foregroundSlowdown"]))
        print("background (priority 1):      %.1f samples/s" % background)
        print("total throughput:             %.3fx the job alone" % result["totalOverAlone"])


if __name__ == "__main__":
    main()
