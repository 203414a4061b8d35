/**
 * npm run bench:fabric: redundant networks (issue 26) through today's path-enumerating engine, each in a process of
 * its own under a time limit (NFV_FABRIC_TIMEOUT seconds, default 60; NFV_FABRIC_VARIANTS=plain,nat). Prints one
 * table: nodes, links, requirements, the simple paths of the requirements (counted up to the engine's bound per
 * requirement), seconds of the simulation and of the whole process, the verdict or the failure (time-out, the
 * engine's refusal), firewalls and rules, and peak memory. Writes bench-results/fabric.{md,json} and each answer to
 * bench-results/fabric/, where the path-free evaluator re-checks them (see package.json).
 *
 * The process is killed at the limit because the paths and flows phases do not look at the clock.
 */
import { fork } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import { NfvError } from '../model/errors.js';
import type { NFV } from '../model/types.js';
import { simulate } from '../engine/simulate.js';
import { buildNetwork } from '../engine/network.js';
import { generateFabric, shapeName, type FabricShape } from './fabric.js';
import { REPO } from './reference.js';

const INSTANCES: FabricShape[] = [
  { kind: 'leaf-spine', spines: 4, leaves: 8, hostsPerLeaf: 2 },
  { kind: 'leaf-spine', spines: 8, leaves: 16, hostsPerLeaf: 4 },
  { kind: 'leaf-spine', spines: 8, leaves: 32, hostsPerLeaf: 8 },
  { kind: 'leaf-spine', spines: 16, leaves: 64, hostsPerLeaf: 4 },
  { kind: 'fat-tree', k: 4 },
  { kind: 'fat-tree', k: 6 },
  { kind: 'fat-tree', k: 8 },
  { kind: 'mesh', routers: 200, degree: 3.5 },
];
/** The engine's bound on paths per requirement (src/engine/simulate.ts), used here to stop counting. */
const PATH_BOUND = 20_000;
const SEED = 1;
const out = path.join(REPO, 'bench-results');
const answers = path.join(out, 'fabric');

/** What one instance's process reports, as it learns it. */
type Message =
  | { kind: 'shape'; nodes: number; links: number; requirements: number }
  | { kind: 'paths'; paths: number; beyond: number; counted: number }
  | { kind: 'done'; seconds: number; verdict: string; held: string; firewalls: number; rules: number; optimal: boolean }
  | { kind: 'refused'; seconds: number; message: string };

const instanceName = (shape: FabricShape, nat: boolean) =>
  `${shapeName(shape).replace(/ /g, '-').replace('=', '')}-${nat ? 'nat' : 'plain'}`;

/** Seconds spent counting paths per instance at most; not part of the time limit. */
const COUNT_SECONDS = 10;

/**
 * Simple paths of the requirements (end hosts never transit, as the engine's pathsBetween), each counted up to the
 * engine's bound, for at most COUNT_SECONDS: how many, how many requirements reach the bound, how many were counted.
 */
function countPaths(nfv: NFV): { paths: number; beyond: number; counted: number } {
  const graph = nfv.graphs.graph![0]!;
  const net = buildNetwork(structuredClone(graph), nfv.constraints);
  const index = new Map(net.map((n) => [n.name, n.index]));
  const until = performance.now() + COUNT_SECONDS * 1000;
  const on = new Uint8Array(net.length);
  let paths = 0;
  let beyond = 0;
  let counted = 0;
  let steps = 0;
  let stopped = false;
  for (const p of nfv.propertyDefinition.property) {
    const [src, dst] = [index.get(p.src)!, index.get(p.dst)!];
    let found = 0;
    // Dead ends (branches that cannot reach dst again) are as exponential as the paths: the clock is read inside.
    const walk = (at: number): void => {
      if (++steps % 4096 === 0 && performance.now() > until) stopped = true;
      for (const next of net[at]!.next) {
        if (stopped || found > PATH_BOUND || on[next]) continue;
        if (next === dst) found++;
        else if (net[next]!.role !== 'endhost') {
          on[next] = 1;
          walk(next);
          on[next] = 0;
        }
      }
    };
    on[src] = 1;
    walk(src);
    on[src] = 0;
    if (stopped && found <= PATH_BOUND) break;
    paths += Math.min(found, PATH_BOUND);
    if (found > PATH_BOUND) beyond++;
    counted++;
  }
  return { paths, beyond, counted };
}

/** One instance, in this process: tells the parent what it finds, stores the answer. */
async function runOne(name: string, timeoutSeconds: number): Promise<void> {
  const send = (m: Message) => new Promise<void>((resolve) => process.send!(m, () => resolve()));
  const [shape, nat] = [...variants()].find(([s, n]) => instanceName(s, n) === name)!;
  const nfv = generateFabric({ shape, nat, seed: SEED });
  const graph = nfv.graphs.graph![0]!;
  await send({
    kind: 'shape',
    nodes: graph.node.length,
    links: graph.node.reduce((s, n) => s + (n.neighbour?.length ?? 0), 0) / 2,
    requirements: nfv.propertyDefinition.property.length,
  });
  await send({ kind: 'paths', ...countPaths(nfv) });
  const started = performance.now();
  try {
    const { nfv: result, report } = await simulate(nfv, { timeoutSeconds });
    const seconds = (performance.now() - started) / 1000;
    writeFileSync(path.join(answers, `${name}.result.json`), JSON.stringify(result));
    await send({
      kind: 'done',
      seconds,
      verdict: report.verdict,
      held: `${report.satisfied}/${report.properties}`,
      firewalls: report.firewalls,
      rules: report.rules,
      optimal: report.optimal,
    });
  } catch (e) {
    if (!(e instanceof NfvError)) throw e;
    const seconds = (performance.now() - started) / 1000;
    await send({ kind: 'refused', seconds, message: `${e.status}: ${e.message}` });
  }
}

function* variants(): Generator<[FabricShape, boolean]> {
  const wanted = (process.env.NFV_FABRIC_VARIANTS ?? 'plain,nat').split(',');
  for (const shape of INSTANCES)
    for (const nat of [false, true]) if (wanted.includes(nat ? 'nat' : 'plain')) yield [shape, nat];
}

/** Peak resident memory of a running process in MB (Linux), read before it is killed. */
function peakOf(pid: number): number | undefined {
  try {
    const kb = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round(Number(kb) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

interface Row {
  instance: string;
  nodes?: number;
  links?: number;
  requirements?: number;
  paths?: string;
  seconds?: number;
  processSeconds: number;
  outcome: string;
  held?: string;
  firewalls?: number;
  rules?: number;
  optimal?: boolean;
  peakMB?: number;
}

/** Runs one instance in a child process, killed at the limit. */
function runChild(name: string, timeoutSeconds: number): Promise<Row> {
  return new Promise((resolve) => {
    const row: Row = { instance: name, processSeconds: 0, outcome: 'crashed' };
    const started = performance.now();
    const child = fork(fileURLToPath(import.meta.url), ['--instance', name], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: { ...process.env, NFV_FABRIC_TIMEOUT: String(timeoutSeconds) },
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    let peak: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    // The limit runs from the end of the path count; a count that hangs is cut at the same limit.
    const limit = (seconds: number) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        peak = peakOf(child.pid!);
        row.outcome = `time-out (${timeoutSeconds} s)`;
        child.kill('SIGKILL');
      }, seconds * 1000);
    };
    limit(timeoutSeconds + COUNT_SECONDS * 2);
    child.on('message', (m: Message) => {
      peak = peakOf(child.pid!) ?? peak;
      if (m.kind === 'shape') {
        Object.assign(row, { nodes: m.nodes, links: m.links, requirements: m.requirements });
      } else if (m.kind === 'paths') {
        const over = m.beyond ? `>=${m.paths}, ${m.beyond} reqs over ${PATH_BOUND}` : String(m.paths);
        row.paths =
          m.counted === 0
            ? `first req not counted in ${COUNT_SECONDS} s`
            : m.counted < row.requirements!
              ? `${over} (${m.counted} reqs counted)`
              : over;
        limit(timeoutSeconds);
      } else if (m.kind === 'done') {
        Object.assign(row, {
          seconds: m.seconds,
          outcome: m.verdict,
          held: m.held,
          firewalls: m.firewalls,
          rules: m.rules,
          optimal: m.optimal,
        });
      } else {
        row.seconds = m.seconds;
        row.outcome = `refused: ${m.message}`;
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      row.processSeconds = (performance.now() - started) / 1000;
      row.peakMB = peak;
      if (code !== 0 && row.outcome === 'crashed') row.outcome = `crashed: ${stderr.trim().split('\n').at(-1) ?? ''}`;
      resolve(row);
    });
  });
}

async function main(): Promise<void> {
  const timeoutSeconds = Number(process.env.NFV_FABRIC_TIMEOUT ?? 60);
  const one = process.argv.indexOf('--instance');
  if (one >= 0) {
    // Peak memory is read by the parent from /proc just before this process ends.
    await runOne(process.argv[one + 1]!, timeoutSeconds);
    await new Promise((r) => setTimeout(r, 50));
    process.exit(0);
  }
  rmSync(answers, { recursive: true, force: true });
  mkdirSync(answers, { recursive: true });
  const rows: Row[] = [];
  const table = new Table({
    head: ['instance', 'nodes', 'links', 'reqs', 'simple paths', 's', 'process s', 'outcome', 'fw', 'rules', 'peak MB'],
    style: { head: [], border: [] },
  });
  for (const [shape, nat] of variants()) {
    const name = instanceName(shape, nat);
    if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${name}`);
    const row = await runChild(name, timeoutSeconds);
    rows.push(row);
    const outcome = row.held ? `${row.outcome} ${row.held}${row.optimal ? '' : ' (not proven)'}` : row.outcome;
    table.push([
      row.instance,
      row.nodes ?? '',
      row.links ?? '',
      row.requirements ?? '',
      row.paths ?? '',
      row.seconds === undefined ? '' : row.seconds.toFixed(2),
      row.processSeconds.toFixed(2),
      outcome.length > 70 ? `${outcome.slice(0, 67)}...` : outcome,
      row.firewalls ?? '',
      row.rules ?? '',
      row.peakMB ?? '',
    ]);
  }
  if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
  const lines = [
    table.toString(),
    '',
    `engine: today's, enumerating simple paths (bound ${PATH_BOUND} per requirement); limit ${timeoutSeconds} s; ` +
      `seed ${SEED}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  writeFileSync(
    path.join(out, 'fabric.md'),
    `# Fabric benchmark (${new Date().toISOString()})\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
  );
  writeFileSync(path.join(out, 'fabric.json'), `${JSON.stringify({ timeoutSeconds, rows }, null, 2)}\n`);
}

await main();
