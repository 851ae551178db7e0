#!/usr/bin/env node
/**
 * Fails when TypeScript modules import each other in a cycle.
 *
 * Usage: node scripts/check-cycles.mjs [DIR...]   (default: src test bench)
 *
 * Reads every .ts file under the given folders, takes its relative imports and re-exports
 * (static, dynamic, `import type` included: a cycle of types is still two modules that cannot be
 * understood apart) with TypeScript's own scanner (ts.preProcessFile), resolves them as NodeNext
 * does (`./x.js` is `./x.ts`), and reports every strongly connected component of more than one
 * module, or a module that imports itself, as one cycle path. Exit 0: no cycle; 1: cycles (listed
 * on stderr); 2: bad arguments.
 *
 * Written on the compiler we already depend on rather than adding madge or dependency-cruiser:
 * the graph is only relative imports between our own .ts files, and ~100 lines check it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/** Every .ts file under `dir` (skipping node_modules and dist), as absolute paths. */
function tsFiles(dir, out = []) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) tsFiles(path, out);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The .ts file a relative specifier names, as NodeNext resolves it, or null when none is there. */
function resolveSpecifier(from, specifier) {
  const base = resolve(dirname(from), specifier);
  const candidates = [base.replace(/\.(m|c)?js$/, '.$1ts'), base, `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((c) => c.endsWith('.ts') && existsSync(c) && statSync(c).isFile()) ?? null;
}

/** The import graph: each file to the files it imports (relative imports only). */
function importGraph(files) {
  const graph = new Map();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = new Set();
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = resolveSpecifier(file, fileName);
      if (target !== null) targets.add(target);
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/** The cycles of a graph: its strongly connected components with a cycle in them (Tarjan), each as a closed path. */
function findCycles(graph) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  // Iterative Tarjan, so that deep import chains cannot overflow the call stack.
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work = [[root, 0]];
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const [node, i] = frame;
      if (i === 0 && !index.has(node)) {
        index.set(node, next);
        low.set(node, next);
        next++;
        stack.push(node);
        onStack.add(node);
      }
      const edges = graph.get(node) ?? [];
      if (i < edges.length) {
        frame[1]++;
        const child = edges[i];
        if (!index.has(child)) work.push([child, 0]);
        else if (onStack.has(child)) low.set(node, Math.min(low.get(node), index.get(child)));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent[0], Math.min(low.get(parent[0]), low.get(node)));
      if (low.get(node) === index.get(node)) {
        const component = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          component.push(member);
        } while (member !== node);
        const selfLoop = component.length === 1 && (graph.get(node) ?? []).includes(node);
        if (component.length > 1 || selfLoop) components.push(component);
      }
    }
  }
  return components.map((c) => pathThrough(graph, c));
}

/** One closed path through a strongly connected component, from its first member (sorted) back to it. */
function pathThrough(graph, component) {
  const members = new Set(component);
  const start = [...component].sort()[0];
  // Breadth-first from start, inside the component, until an edge leads back to start.
  const previous = new Map([[start, null]]);
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const child of graph.get(node) ?? []) {
      if (!members.has(child)) continue;
      if (child === start) {
        const path = [start];
        for (let n = node; n !== null && n !== start; n = previous.get(n)) path.splice(1, 0, n);
        return [...path, start];
      }
      if (!previous.has(child)) {
        previous.set(child, node);
        queue.push(child);
      }
    }
  }
  return [start, start];
}

function main(argv) {
  const dirs = argv.length > 0 ? argv : ['src', 'test', 'bench'];
  const missing = dirs.find((d) => !existsSync(d) || !statSync(d).isDirectory());
  if (missing !== undefined) {
    process.stderr.write(`check-cycles: '${missing}' is not a folder; give folders of .ts files (default: src test bench)\n`);
    return 2;
  }
  const files = dirs.flatMap((d) => tsFiles(resolve(d)));
  const cycles = findCycles(importGraph(files));
  const show = (p) => relative(process.cwd(), p);
  if (cycles.length === 0) {
    process.stdout.write(`check-cycles: no import cycle among ${files.length} modules\n`);
    return 0;
  }
  for (const cycle of cycles) process.stderr.write(`import cycle: ${cycle.map(show).join(' -> ')}\n`);
  process.stderr.write(`check-cycles: ${cycles.length} import cycle(s); move what both sides need into a module beneath both\n`);
  return 1;
}

process.exitCode = main(process.argv.slice(2));
