import { benchBurst } from './burst.js';
import { benchLayouts } from './layouts.js';
import { benchService } from './service.js';
import { benchSimulate, benchSimulateHonest } from './simulate.js';
import { benchStore } from './store.js';

/** `npm run bench`: prints each benchmark's figures beside what they are compared with. */
for (const line of benchLayouts()) process.stdout.write(`${line}\n`);
for (const line of benchSimulateHonest()) process.stdout.write(`${line}\n`);
for (const line of benchSimulate()) process.stdout.write(`${line}\n`);
for (const line of benchBurst()) process.stdout.write(`${line}\n`);
for (const line of await benchStore()) process.stdout.write(`${line}\n`);
for (const line of await benchService()) process.stdout.write(`${line}\n`);
