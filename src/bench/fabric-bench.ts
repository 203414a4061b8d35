/**
 * npm run bench:fabric: redundant networks (issue 26) through the engine as shipped (`paths: 'few'`) and, in the
 * same run, through the path-enumerating method kept as its baseline (`paths: 'all'`: every requirement lists its
 * simple paths, refused beyond 20,000). Each instance and method runs in a process of its own, killed a little after
 * its time limit (NFV_FABRIC_TIMEOUT seconds for the shipped engine, default 60; NFV_FABRIC_PATHS_TIMEOUT for the
 * path method, default 30, so that the whole run stays well under 10 minutes); once the path method runs out of time
 * on an instance, the larger ones of the same family and variant are skipped for it. NFV_FABRIC_VARIANTS=plain,nat.
 *
 * Prints one table: nodes, links, requirements, the simple paths of the requirements (counted up to the path bound
 * per requirement), then per method the seconds of the simulation and of the whole process, the outcome, firewalls,
 * rules and peak memory; under it the targets of issue 26, each met or not met. Writes bench-results/fabric.{md,json}
 * and every answer to bench-results/fabric/ (`NAME.result.json` from the shipped engine, `NAME.paths.result.json`
 * from the path method, listed in `answers.json`), where the path-free evaluator re-checks them (see package.json).
 *
 * The process is killed at the limit because the paths and flows phases do not look at the clock.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import { NfvError } from '../model/errors.js';
import type { NFV } from '../model/types.js';
import { PATH_LIMIT, simulate, type PathListing } from '../engine/simulate.js';
import { buildNetwork } from '../engine/flows/network.js';
import { generateFabric, shapeName, type FabricShape } from './fabric.js';
import { REPO } from './reference.js';
import { runInChild, timedOut } from './child.js';

/** Smaller before larger within each family: a time-out of the path method skips the rest of the family. */
const INSTANCES: FabricShape[] = [
  // The issue's smallest fabric, where the path-enumerating method still answers: the two side by side.
  { kind: 'leaf-spine', spines: 2, leaves: 8, hostsPerLeaf: 2 },
  { kind: 'leaf-spine', spines: 4, leaves: 8, hostsPerLeaf: 2 },
  { kind: 'leaf-spine', spines: 8, leaves: 16, hostsPerLeaf: 4 },
  { kind: 'leaf-spine', spines: 8, leaves: 32, hostsPerLeaf: 8 },
  { kind: 'leaf-spine', spines: 16, leaves: 64, hostsPerLeaf: 4 },
  { kind: 'fat-tree', k: 4 },
  { kind: 'fat-tree', k: 6 },
  { kind: 'fat-tree', k: 8 },
  { kind: 'mesh', routers: 200, degree: 3.5 },
];
const SEED = 1;
/** Seconds a process gets beyond its time limit, to start, generate the network and report the engine's time-out. */
const GRACE_SECONDS = 5;
/** Seconds spent counting paths per instance at most (in this process, before the methods run). */
const COUNT_SECONDS = 10;
/** The targets of issue 26. */
const TARGET_SECONDS = 10;
const TARGET_MB = 1024;
const out = path.join(REPO, 'bench-results');
const answers = path.join(out, 'fabric');

interface Method {
  listing: Extract<PathListing, 'few' | 'all'>;
  title: string;
  /** Between the instance name and `.result.json` in the answer's file name. */
  suffix: string;
  timeoutSeconds: number;
}

const METHODS: Method[] = [
  {
    listing: 'few',
    title: 'engine as shipped',
    suffix: '',
    timeoutSeconds: Number(process.env.NFV_FABRIC_TIMEOUT ?? 60),
  },
  {
    listing: 'all',
    title: 'path-enumerating method',
    suffix: '.paths',
    timeoutSeconds: Number(process.env.NFV_FABRIC_PATHS_TIMEOUT ?? 30),
  },
];

/** What one instance's process reports at its end. */
type Message =
  | { kind: 'done'; seconds: number; verdict: string; held: string; firewalls: number; rules: number; optimal: boolean }
  | { kind: 'refused'; seconds: number; status: number; message: string };

const instanceName = (shape: FabricShape, nat: boolean) =>
  `${shapeName(shape).replace(/ /g, '-').replace('=', '')}-${nat ? 'nat' : 'plain'}`;
const answerFile = (name: string, method: Method) => `${name}${method.suffix}.result.json`;

/**
 * Simple paths of the requirements (end hosts never transit, as the engine's pathsBetween), each counted up to the
 * path bound, for at most COUNT_SECONDS: how many, how many requirements reach the bound, how many were counted.
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
        if (stopped || found > PATH_LIMIT || on[next]) continue;
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
    if (stopped && found <= PATH_LIMIT) break;
    paths += Math.min(found, PATH_LIMIT);
    if (found > PATH_LIMIT) beyond++;
    counted++;
  }
  return { paths, beyond, counted };
}

function* variants(): Generator<[FabricShape, boolean]> {
  const wanted = (process.env.NFV_FABRIC_VARIANTS ?? 'plain,nat').split(',');
  for (const shape of INSTANCES)
    for (const nat of [false, true]) if (wanted.includes(nat ? 'nat' : 'plain')) yield [shape, nat];
}

/** One instance by one method, in this process: generates it, simulates, stores the answer, tells the parent. */
async function runOne(name: string, method: Method): Promise<void> {
  const send = (m: Message) => new Promise<void>((resolve) => process.send!(m, () => resolve()));
  const [shape, nat] = [...variants()].find(([s, n]) => instanceName(s, n) === name)!;
  const nfv = generateFabric({ shape, nat, seed: SEED });
  const started = performance.now();
  try {
    const { nfv: result, report } = await simulate(nfv, {
      timeoutSeconds: method.timeoutSeconds,
      paths: method.listing,
    });
    const seconds = (performance.now() - started) / 1000;
    writeFileSync(path.join(answers, answerFile(name, method)), JSON.stringify(result));
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
    await send({ kind: 'refused', seconds, status: e.status, message: e.message });
  }
}

/** One method on one instance. */
interface Run {
  /** Seconds of the simulation, as the child measured it (absent when killed or skipped). */
  seconds?: number;
  /** Seconds from starting the process to its end: start, generation, simulation, writing the answer. */
  processSeconds?: number;
  /** Answered, refused (with the status), killed at the limit, crashed or skipped. */
  outcome: 'answered' | 'refused' | 'killed' | 'crashed' | 'skipped';
  verdict?: string;
  held?: string;
  optimal?: boolean;
  firewalls?: number;
  rules?: number;
  peakMB?: number;
  status?: number;
  /** The engine's refusal or the last line the crashed process wrote. */
  message?: string;
  /** The stored answer, under bench-results/fabric/. */
  answer?: string;
}

interface Row {
  instance: string;
  family: string;
  nodes: number;
  links: number;
  requirements: number;
  paths: string;
  runs: Run[];
}

/** Runs one instance by one method in a child process, killed GRACE_SECONDS after the method's limit. */
async function runChild(name: string, method: Method): Promise<Run> {
  const run: Run = { outcome: 'crashed' };
  const args = ['--instance', name, '--paths', method.listing];
  const end = await runInChild(
    fileURLToPath(import.meta.url),
    args,
    method.timeoutSeconds + GRACE_SECONDS,
    (m: Message) => {
      run.seconds = m.seconds;
      if (m.kind === 'done') {
        const { verdict, held, firewalls, rules, optimal } = m;
        Object.assign(run, { outcome: 'answered', verdict, held, firewalls, rules, optimal });
        run.answer = answerFile(name, method);
      } else Object.assign(run, { outcome: 'refused', status: m.status, message: m.message });
    },
  );
  if (end.killed) run.outcome = 'killed';
  run.processSeconds = end.processSeconds;
  run.peakMB = end.peakMB;
  if (end.code !== 0 && run.outcome === 'crashed') run.message = end.lastError;
  // An answer written just before the kill was never reported: it is not the method's answer.
  if (run.outcome !== 'answered') rmSync(path.join(answers, answerFile(name, method)), { force: true });
  return run;
}

/** The outcome in a table cell; long messages go to numbered notes under the table. */
function outcomeCell(run: Run, method: Method, notes: string[], instance: string): string {
  switch (run.outcome) {
    case 'answered':
      return `${run.verdict} ${run.held} ${run.optimal ? 'proven' : 'not proven'}`;
    case 'killed':
      return `killed at ${method.timeoutSeconds + GRACE_SECONDS} s`;
    case 'skipped':
      return 'skipped (smaller one timed out)';
    default:
      notes.push(`${instance}, ${method.title}: ${run.outcome} ${run.status ?? ''} ${run.message ?? ''}`);
      return `${run.outcome}${run.status ? ` ${run.status}` : ''} (note ${notes.length})`;
  }
}

/** The simple paths counted: a figure, ">=" where some requirement reached the bound or was not counted. */
function pathsCell(count: ReturnType<typeof countPaths>, requirements: number): string {
  if (count.counted === 0) return `? (0/${requirements} reqs in ${COUNT_SECONDS} s)`;
  const figure = count.beyond || count.counted < requirements ? `>=${count.paths}` : String(count.paths);
  if (count.counted < requirements) return `${figure} (${count.counted}/${requirements} reqs in ${COUNT_SECONDS} s)`;
  return count.beyond ? `${figure} (${count.beyond} reqs at bound)` : figure;
}

const seconds = (s: number | undefined) => (s === undefined ? '' : s.toFixed(2));

interface Target {
  target: string;
  met: boolean;
  /** The figures it was judged on. */
  figures: string;
}

/** The targets of issue 26, judged on the engine as shipped. */
function targets(rows: Row[]): Target[] {
  const found: Target[] = [];
  const shipped = (r: Row) => r.runs[0]!;

  for (const [label, prefix] of [
    ['leaf-spine 8x32', 'leaf-spine-8x32-'],
    ['fat-tree k=8', 'fat-tree-k8-'],
  ] as const) {
    const these = rows.filter((r) => r.instance.startsWith(prefix));
    const figures = these.map((r) => {
      const run = shipped(r);
      const held = run.outcome === 'answered' ? `${run.verdict} ${run.held}` : run.outcome;
      return `${r.instance.slice(prefix.length)} ${seconds(run.processSeconds)} s (${r.requirements} reqs, ${held})`;
    });
    found.push({
      target:
        `${label} answered in under ${TARGET_SECONDS} s whole process ` +
        '(every answer re-checked by test/bench/fabric.test.ts, run after this table)',
      met:
        these.length > 0 &&
        these.every((r) => shipped(r).outcome === 'answered' && shipped(r).processSeconds! < TARGET_SECONDS),
      figures: figures.join(', ') || 'not run',
    });
  }

  for (const variant of ['plain', 'nat']) {
    const small = rows.find((r) => r.instance === `leaf-spine-8x16-${variant}`);
    const large = rows.find((r) => r.instance === `leaf-spine-16x64-${variant}`);
    if (!small || !large) continue;
    const target = `growth 8x16 to 16x64 (${variant}) below quadratic in links x requirements`;
    const [a, b] = [shipped(small), shipped(large)];
    if (a.outcome !== 'answered' || b.outcome !== 'answered') {
      found.push({ target, met: false, figures: 'one of them did not answer' });
      continue;
    }
    const [pa, pb] = [small.links * small.requirements, large.links * large.requirements];
    const product = pb / pa;
    const time = b.processSeconds! / a.processSeconds!;
    const simulation = b.seconds! / a.seconds!;
    const exponent = (ratio: number) => (Math.log(ratio) / Math.log(product)).toFixed(2);
    found.push({
      target,
      met: time < product * product,
      figures:
        `links x requirements ${small.links} x ${small.requirements} = ${pa} to ` +
        `${large.links} x ${large.requirements} = ${pb}, ratio ${product.toFixed(1)} (squared ` +
        `${(product * product).toFixed(0)}); whole process ${seconds(a.processSeconds)} s to ` +
        `${seconds(b.processSeconds)} s, ratio ${time.toFixed(1)} (${product.toFixed(1)}^${exponent(time)}); ` +
        `simulation alone ratio ${simulation.toFixed(1)} (${product.toFixed(1)}^${exponent(simulation)})`,
    });
  }

  const largest = Math.max(...rows.map((r) => r.links));
  const biggest = rows.filter((r) => r.links === largest);
  found.push({
    target: `peak memory of the largest fabric at most ${TARGET_MB} MB`,
    met: biggest.every((r) => shipped(r).peakMB !== undefined && shipped(r).peakMB! <= TARGET_MB),
    figures: biggest.map((r) => `${r.instance} (${r.links} links) ${shipped(r).peakMB ?? '?'} MB`).join(', '),
  });
  return found;
}

async function main(): Promise<void> {
  const one = process.argv.indexOf('--instance');
  if (one >= 0) {
    const listing = process.argv[process.argv.indexOf('--paths') + 1];
    // Peak memory is read by the parent from /proc just before this process ends.
    await runOne(
      process.argv[one + 1]!,
      METHODS.find((m) => m.listing === listing)!,
    );
    await new Promise((r) => setTimeout(r, 50));
    process.exit(0);
  }
  rmSync(answers, { recursive: true, force: true });
  mkdirSync(answers, { recursive: true });
  const loadBefore = loadavg()[0]!;
  const runStarted = performance.now();
  const rows: Row[] = [];
  /** Families (kind and variant) on which a method timed out, per method. */
  const outOfTime = METHODS.map(() => new Set<string>());
  for (const [shape, nat] of variants()) {
    const name = instanceName(shape, nat);
    const family = `${shape.kind}-${nat ? 'nat' : 'plain'}`;
    const nfv = generateFabric({ shape, nat, seed: SEED });
    const graph = nfv.graphs.graph![0]!;
    if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${name}: counting paths`);
    const count = countPaths(nfv);
    const requirements = nfv.propertyDefinition.property.length;
    const row: Row = {
      instance: name,
      family,
      nodes: graph.node.length,
      links: graph.node.reduce((s, n) => s + (n.neighbour?.length ?? 0), 0) / 2,
      requirements,
      paths: pathsCell(count, requirements),
      runs: [],
    };
    for (const [k, method] of METHODS.entries()) {
      if (outOfTime[k]!.has(family)) {
        row.runs.push({ outcome: 'skipped' });
        continue;
      }
      if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${name}: ${method.title}`);
      const run = await runChild(name, method);
      if (timedOut(run)) outOfTime[k]!.add(family);
      row.runs.push(run);
    }
    rows.push(row);
  }
  if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
  const runSeconds = (performance.now() - runStarted) / 1000;
  const loadAfter = loadavg()[0]!;

  const table = new Table({ style: { head: [], border: [] } });
  const perMethod = ['s', 'process s', 'outcome', 'fw', 'rules', 'peak MB'];
  table.push([
    { content: '', colSpan: 5 },
    ...METHODS.map((m) => ({ content: `${m.title} (paths: '${m.listing}')`, colSpan: perMethod.length })),
  ]);
  table.push(['instance', 'nodes', 'links', 'reqs', 'simple paths', ...METHODS.flatMap(() => perMethod)]);
  const notes: string[] = [];
  for (const row of rows) {
    table.push([
      row.instance,
      row.nodes,
      row.links,
      row.requirements,
      row.paths,
      ...row.runs.flatMap((run, k) => [
        seconds(run.seconds),
        seconds(run.processSeconds),
        outcomeCell(run, METHODS[k]!, notes, row.instance),
        run.firewalls ?? '',
        run.rules ?? '',
        run.peakMB ?? '',
      ]),
    ]);
  }
  const goals = targets(rows);
  const lines = [
    table.toString(),
    ...notes.map((n, k) => `note ${k + 1}: ${n}`),
    '',
    'Targets (the engine as shipped):',
    ...goals.map((g) => `- ${g.target}: ${g.met ? 'met' : 'NOT MET'}; ${g.figures}`),
    '',
    `Seed ${SEED}; time limits: ${METHODS.map((m) => `${m.title} ${m.timeoutSeconds} s`).join(', ')} ` +
      `(processes killed ${GRACE_SECONDS} s after); simple paths counted up to ${PATH_LIMIT} per requirement, ` +
      `at most ${COUNT_SECONDS} s per instance; "process s" from starting the process to its end (generation ` +
      `included). Whole run ${runSeconds.toFixed(0)} s; load (1 min) ${loadBefore.toFixed(2)} before, ` +
      `${loadAfter.toFixed(2)} after.`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  writeFileSync(
    path.join(out, 'fabric.md'),
    `# Fabric benchmark (${new Date().toISOString()})\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
  );
  const methods = METHODS.map(({ listing, title, timeoutSeconds }) => ({ listing, title, timeoutSeconds }));
  const summary = { seed: SEED, methods, runSeconds, load: [loadBefore, loadAfter], targets: goals, rows };
  writeFileSync(path.join(out, 'fabric.json'), `${JSON.stringify(summary, null, 2)}\n`);
  // The stored answers and the method of each, for the test that re-checks them.
  const stored = rows.flatMap((r) =>
    r.runs.flatMap((run, k) =>
      run.answer ? [{ instance: r.instance, method: METHODS[k]!.listing, file: run.answer }] : [],
    ),
  );
  writeFileSync(path.join(answers, 'answers.json'), `${JSON.stringify(stored, null, 2)}\n`);
}

await main();
