#!/usr/bin/env -S node --max-semi-space-size=64
// A young generation of 64 MB semi-spaces (V8's default is 16 MB): a scheduling pass of a large
// service allocates megabytes, and with the default its young generation is collected in the
// middle of passes, which promotes what they hold and makes the slow ones (bench/service.ts
// SERVICE_NODE_FLAGS, measured side by side by `npm run bench`). `env -S` splits the line
// (GNU coreutils 8.30+, FreeBSD, macOS).
import { main } from '../dist/src/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
