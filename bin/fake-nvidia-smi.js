#!/usr/bin/env node
// The fake nvidia-smi of migpool's tests: prints what the real tool prints, acting on the
// simulated machine in the state file named by MIGPOOL_FAKE_NVIDIA_SMI_STATE.
import { main } from '../dist/src/gpu/fake-nvidia-smi/main.js';

process.exitCode = main(process.argv.slice(2), process.env);
