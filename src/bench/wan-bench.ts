/**
 * npm run bench:wan: generated WANs (issue 48, src/bench/wan.ts) of 16 to 750 PoPs (backbone-like graphs, rings,
 * ladders, a grid mesh), plain and with NATs, through the engine as shipped and, in the same run, the previous
 * method: the same engine given no work for proofs (`proofWork: 0` in SimulateOptions), as it answered past its proof
 * budget before lower bounds and the probe's kept firewalls landed. (Not quite "the fast answer alone": where our
 * solver is out of work, Z3 is still tried within the time limit, and the fast answer stands where Z3 fails.) Each
 * instance and method runs in a process of its own (the shipped engine as `bin/nfv simulate` on the instance written
 * as a JSON document, as an operator runs it; the previous method in a child of this bench), killed a little after
 * its time limit (NFV_WAN_TIMEOUT seconds for the shipped engine, default 60; NFV_WAN_PREVIOUS_TIMEOUT for the
 * previous method, default 30); once a method runs out of time on an instance, the larger ones of the same family
 * and variant are skipped for it. The shipped engine runs on every instance before the previous method, and
 * processes are skipped once the run has taken NFV_WAN_BUDGET seconds (default 540, so that the run ends within
 * about 10 minutes). NFV_WAN_VARIANTS=plain,nat; NFV_WAN_MAX_POPS leaves out the generated instances of more PoPs.
 *
 * npm run bench:zoo (`--zoo`): the same on the networks of the Internet Topology Zoo (zoo.ts: the largest connected
 * part of each GML file, built as the generated WANs are) of at most NFV_ZOO_MAX_POPS PoPs (default 60), read from
 * the NFV_ZOO folder or the read-only mirror (it says so and ends with 0 where neither is there); NFV_ZOO_NETWORKS
 * (names, comma-separated) or NFV_ZOO_SAMPLE=N (N networks evenly spaced in name order) narrow them. A time-out skips
 * nothing else there (each network is a family of its own). Writes bench-results/zoo.{md,json}.
 *
 * Prints one table: PoPs, links between PoPs, requirements, then per method the seconds of the simulation and of the
 * whole process, proven or not, firewalls and rules each with its proven lower bound, the gap on rules
 * (100 (rules - bound) / rules, 0 where proven) and peak memory; under it the targets of issue 48 (item 4, and item
 * 3's for instances of at most 60 PoPs), each met or not met. Writes bench-results/wan.{md,json}.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import { EXIT, NfvError } from '../model/errors.js';
import { simulate, type SimulateOptions } from '../engine/simulate.js';
import { generateWan, popsOf, wanName, type WanShape } from './wan.js';
import { REPO, median } from './reference.js';
import { runCommand, runInChild, simulateSummary, timedOut } from './child.js';
import { openZoo, ZOO_MIRROR } from './zoo.js';

interface Instance {
  shape: WanShape;
  /** Requirements in all, where not two per host. */
  requirements?: number;
}

/** Smaller before larger within each family: a time-out skips the rest of the family for that method. */
const GENERATED: Instance[] = [
  ...[16, 24, 40, 60, 100, 200, 400].map((pops) => ({ shape: { kind: 'wan', pops } as WanShape })),
  // The issue's largest: Kdl's size in the Internet Topology Zoo.
  { shape: { kind: 'wan', pops: 750, links: 900 }, requirements: 800 },
  { shape: { kind: 'ring', pops: 24 } },
  // The issue's long ring (VtlWavenet 2011 is nearly one).
  { shape: { kind: 'ring', pops: 100 } },
  { shape: { kind: 'ladder', pops: 40 } },
  { shape: { kind: 'ladder', pops: 100 } },
  { shape: { kind: 'mesh', rows: 6, columns: 10 } },
];
const SEED = 1;
/** `--zoo`: the Internet Topology Zoo's networks instead of the generated ones. */
const ZOO = process.argv.includes('--zoo');
const ZOO_WHERE = process.env.NFV_ZOO ?? ZOO_MIRROR;
const ZOO_MAX_POPS = Number(process.env.NFV_ZOO_MAX_POPS ?? 60);

/**
 * The Zoo's networks of at most ZOO_MAX_POPS PoPs as instances, narrowed as NFV_ZOO_NETWORKS or NFV_ZOO_SAMPLE say
 * (`only`: that network alone, for a child); undefined where the Zoo is not there.
 */
function zooInstances(only?: string): Instance[] | undefined {
  const zoo = openZoo(ZOO_WHERE);
  if (!zoo) return undefined;
  const listed = process.env.NFV_ZOO_NETWORKS?.split(',');
  let names = only ? [only] : listed ? zoo.names.filter((n) => listed.includes(n)) : zoo.names;
  const all = names.map((name) => ({ shape: { kind: 'graph' as const, name, ...zoo.read(name) } }));
  const small = all.filter((i) => i.shape.pops >= 2 && i.shape.pops <= ZOO_MAX_POPS);
  const sample = Number(process.env.NFV_ZOO_SAMPLE ?? 0);
  if (only || !sample || sample >= small.length) return small;
  names = Array.from({ length: sample }, (_, k) => small[Math.floor((k * small.length) / sample)]!.shape.name);
  return small.filter((i) => names.includes(i.shape.name));
}
/**
 * Seconds the whole run may take before the remaining processes are skipped (the previous method's run after all of
 * the shipped engine's, so that they are the ones left out).
 */
const RUN_BUDGET_SECONDS = Number(process.env.NFV_WAN_BUDGET ?? 540);
/** Seconds a process gets beyond its time limit, to start, generate the network and report the engine's time-out. */
const GRACE_SECONDS = 5;
/** The targets of issue 48 item 4 (and item 3's for the small ones). */
const LARGE_SECONDS = 5;
const SMALL_SECONDS = 1;
const SMALL_POPS = 60;
const MEDIAN_GAP = 10;
const out = path.join(REPO, 'bench-results');

interface Method {
  key: 'shipped' | 'previous';
  title: string;
  options: SimulateOptions;
  timeoutSeconds: number;
  /**
   * Run as an operator runs it, `bin/nfv simulate` on the instance written as a JSON document, its summary line read
   * back from stderr; else in a child of this bench (the previous method's `proofWork: 0` is no CLI option), which
   * starts about 0.2 s slower: it loads the engine's modules unbundled and builds the instance itself (Zoo networks
   * read with git), but neither reads nor writes a document (docs/performance-log.md).
   */
  cli: boolean;
}

const METHODS: Method[] = [
  {
    key: 'shipped',
    title: 'engine as shipped',
    options: {},
    timeoutSeconds: Number(process.env.NFV_WAN_TIMEOUT ?? 60),
    cli: true,
  },
  {
    key: 'previous',
    title: 'previous method (proofWork: 0)',
    options: { proofWork: 0 },
    timeoutSeconds: Number(process.env.NFV_WAN_PREVIOUS_TIMEOUT ?? 30),
    cli: false,
  },
];

/** What one instance's process reports at its end. */
type Message =
  | {
      kind: 'done';
      seconds: number;
      verdict: string;
      held: string;
      firewalls: number;
      rules: number;
      optimal: boolean;
      bound?: { firewalls: number; rules: number };
    }
  | { kind: 'refused'; seconds: number; status: number; message: string };

const instanceName = (instance: Instance, nat: boolean) => `${wanName(instance.shape)}-${nat ? 'nat' : 'plain'}`;
const generate = (instance: Instance, nat: boolean) =>
  generateWan({ shape: instance.shape, nat, seed: SEED, requirements: instance.requirements });

/** The instances of this run, in order, each plain and with NATs (`only`: the one a child runs). */
function* variants(only?: string): Generator<[Instance, boolean]> {
  const wanted = (process.env.NFV_WAN_VARIANTS ?? 'plain,nat').split(',');
  const most = Number(process.env.NFV_WAN_MAX_POPS ?? Infinity);
  const generated = GENERATED.filter((i) => popsOf(i.shape) <= most);
  const instances = ZOO ? (zooInstances(only?.replace(/-(plain|nat)$/, '')) ?? []) : generated;
  for (const instance of instances)
    for (const nat of [false, true]) if (wanted.includes(nat ? 'nat' : 'plain')) yield [instance, nat];
}

/** One instance by one method, in this process: generates it, simulates, tells the parent. */
async function runOne(name: string, method: Method): Promise<void> {
  const send = (m: Message) => new Promise<void>((resolve) => process.send!(m, () => resolve()));
  const [instance, nat] = [...variants(name)].find(([i, n]) => instanceName(i, n) === name)!;
  const nfv = generate(instance, nat);
  const started = performance.now();
  try {
    const { report } = await simulate(nfv, { ...method.options, timeoutSeconds: method.timeoutSeconds });
    const bound = report.lowerBound && { firewalls: report.lowerBound.firewalls, rules: report.lowerBound.rules };
    await send({
      kind: 'done',
      seconds: (performance.now() - started) / 1000,
      verdict: report.verdict,
      held: `${report.satisfied}/${report.properties}`,
      firewalls: report.firewalls,
      rules: report.rules,
      optimal: report.optimal,
      ...(bound ? { bound } : {}),
    });
  } catch (e) {
    if (!(e instanceof NfvError)) throw e;
    const seconds = (performance.now() - started) / 1000;
    await send({ kind: 'refused', seconds, status: e.status, message: e.message });
  }
}

/** One method on one instance. */
interface Run {
  /** Seconds of the simulation, as the process measured it. */
  seconds?: number;
  /**
   * Seconds from starting the process to its end: for `bin/nfv simulate` (Method.cli) its start, reading the document,
   * the simulation and writing the answer; for a child of this bench its start, generation and simulation.
   */
  processSeconds?: number;
  outcome: 'answered' | 'refused' | 'killed' | 'crashed' | 'skipped';
  verdict?: string;
  held?: string;
  optimal?: boolean;
  firewalls?: number;
  rules?: number;
  /** The proven lower bounds (the answer's own counts where proven). */
  bound?: { firewalls: number; rules: number };
  /** 100 (rules - bound) / rules; 0 where proven. */
  gap?: number;
  peakMB?: number;
  status?: number;
  message?: string;
}

interface Row {
  instance: string;
  family: string;
  pops: number;
  links: number;
  requirements: number;
  runs: Run[];
}

/** The gap on rules in percent, 100 (rules - bound) / rules: 0 where there are none (or where proven). */
const gapOf = (rules: number, bound: number) => (rules > 0 ? (100 * (rules - bound)) / rules : 0);

/** Runs one instance by one method in a child process, killed GRACE_SECONDS after the time limit. */
async function runChild(name: string, method: Method): Promise<Run> {
  const run: Run = { outcome: 'crashed' };
  const args = ['--instance', name, '--method', method.key, ...(ZOO ? ['--zoo'] : [])];
  const end = await runInChild(
    fileURLToPath(import.meta.url),
    args,
    method.timeoutSeconds + GRACE_SECONDS,
    (m: Message) => {
      run.seconds = m.seconds;
      if (m.kind === 'done') {
        const { verdict, held, firewalls, rules, optimal } = m;
        const bound = optimal ? { firewalls, rules } : m.bound;
        const gap = bound && gapOf(rules, bound.rules);
        Object.assign(run, { outcome: 'answered', verdict, held, firewalls, rules, optimal, bound, gap });
      } else Object.assign(run, { outcome: 'refused', status: m.status, message: m.message });
    },
  );
  if (end.killed) run.outcome = 'killed';
  run.processSeconds = end.processSeconds;
  run.peakMB = end.peakMB;
  if (end.code !== 0 && run.outcome === 'crashed') run.message = end.lastError;
  return run;
}

/**
 * Runs one instance through the CLI (`Method.cli`): `bin/nfv simulate` on its document, killed GRACE_SECONDS after
 * the time limit. Without a summary line, exit 5 is the engine's own time-out (504) and exit 2 a refusal (400),
 * each with the last line it wrote; any other end is a crash.
 */
async function runCli(document: string, method: Method): Promise<Run> {
  const args = [path.join(REPO, 'bin', 'nfv'), 'simulate', document, '--timeout', String(method.timeoutSeconds)];
  const end = await runCommand(process.execPath, args, method.timeoutSeconds + GRACE_SECONDS);
  const said = simulateSummary(end.stderr);
  const run: Run = { processSeconds: end.processSeconds, peakMB: end.peakMB, outcome: 'crashed' };
  if (end.killed) run.outcome = 'killed';
  else if (said) {
    const { seconds, verdict, held, firewalls, rules, optimal, bound } = said;
    const gap = gapOf(rules, bound.rules);
    Object.assign(run, { outcome: 'answered', seconds, verdict, held, firewalls, rules, optimal, bound, gap });
  } else if (end.code === EXIT.timeout) Object.assign(run, { outcome: 'refused', status: 504, message: end.lastError });
  else if (end.code === EXIT.invalid) Object.assign(run, { outcome: 'refused', status: 400, message: end.lastError });
  else run.message = end.lastError;
  return run;
}

/** The outcome in a table cell; long messages go to numbered notes under the table. */
function outcomeCell(run: Run, method: Method, notes: string[], label: string): string {
  switch (run.outcome) {
    case 'answered':
      return `${run.verdict} ${run.held} ${run.optimal ? 'proven' : 'not proven'}`;
    case 'killed':
      return `killed at ${method.timeoutSeconds + GRACE_SECONDS} s`;
    case 'skipped':
      return `skipped (${run.message})`;
    default:
      notes.push(`${label}: ${run.outcome} ${run.status ?? ''} ${run.message ?? ''}`);
      return `${run.outcome}${run.status ? ` ${run.status}` : ''} (note ${notes.length})`;
  }
}

const seconds = (s: number | undefined) => (s === undefined ? '' : s.toFixed(2));
/** A count and its proven lower bound: "12" where proven, "12 >= 9" where not. */
const withBound = (run: Run, k: 'firewalls' | 'rules') =>
  run[k] === undefined ? '' : run.optimal || !run.bound ? String(run[k]) : `${run[k]} >= ${run.bound[k]}`;
const gapCell = (run: Run) => (run.gap === undefined ? '' : `${run.gap.toFixed(1)} %`);

interface Target {
  target: string;
  met: boolean;
  figures: string;
}

/** The targets of issue 48, judged on the engine as shipped. */
function targets(rows: Row[]): Target[] {
  const shipped = (r: Row) => r.runs[0]!;
  const described = (r: Row) => {
    const run = shipped(r);
    if (run.outcome !== 'answered') return `${r.instance} ${run.outcome}`;
    const gap = run.optimal ? 'proven' : `gap ${gapCell(run)}`;
    return `${r.instance} ${seconds(run.processSeconds)} s (${gap})`;
  };
  const found: Target[] = [];
  const large = rows.filter((r) => /^(wan-750|ring-100)-/.test(r.instance));
  found.push({
    target:
      'the 750-PoP WAN (900 links, 800 requirements) and the ring of 100 PoPs (200 requirements) each under ' +
      `${LARGE_SECONDS} s whole process, with its gap printed`,
    met:
      large.length > 0 &&
      large.every((r) => {
        const run = shipped(r);
        return run.outcome === 'answered' && run.processSeconds! < LARGE_SECONDS && run.gap !== undefined;
      }),
    figures: large.map(described).join(', ') || 'not run',
  });
  // An instance without an answer (or without a bound) counts as a gap of 100 %: nothing is known of it.
  const over = rows.filter((r) => r.pops > SMALL_POPS);
  const gaps = over.map((r) => (shipped(r).outcome === 'answered' ? (shipped(r).gap ?? 100) : 100));
  const middle = median(gaps);
  found.push({
    target:
      `median gap on rules of the instances over ${SMALL_POPS} PoPs under ${MEDIAN_GAP} % ` +
      '(no answer counts as 100 %)',
    met: over.length > 0 && middle < MEDIAN_GAP,
    figures: `median ${middle.toFixed(1)} % of ${over.length} (${gaps.map((g) => g.toFixed(1)).join(', ')})`,
  });
  const small = rows.filter((r) => r.pops <= SMALL_POPS);
  const failing = small.filter((r) => {
    const run = shipped(r);
    return !(run.outcome === 'answered' && run.optimal && run.processSeconds! < SMALL_SECONDS);
  });
  found.push({
    target: `every instance of at most ${SMALL_POPS} PoPs proven minimal, each under ${SMALL_SECONDS} s whole process`,
    met: small.length > 0 && failing.length === 0,
    figures:
      `${small.length - failing.length} of ${small.length} met` +
      (failing.length ? `; not: ${failing.map(described).join(', ')}` : ''),
  });
  return found;
}

async function main(): Promise<void> {
  const one = process.argv.indexOf('--instance');
  if (one >= 0) {
    const key = process.argv[process.argv.indexOf('--method') + 1];
    await runOne(
      process.argv[one + 1]!,
      METHODS.find((m) => m.key === key)!,
    );
    // Peak memory is read by the parent from /proc when the message arrives, before this process ends.
    await new Promise((r) => setTimeout(r, 50));
    process.exit(0);
  }
  if (ZOO && !openZoo(ZOO_WHERE)) {
    process.stdout.write(
      `bench:zoo: no Internet Topology Zoo at ${ZOO_WHERE} (set NFV_ZOO to a folder holding gml/)\n`,
    );
    return;
  }
  const file = ZOO ? 'zoo' : 'wan';
  mkdirSync(out, { recursive: true });
  const loadBefore = loadavg()[0]!;
  const runStarted = performance.now();
  const rows: Row[] = [];
  const outOfTime = METHODS.map(() => new Set<string>());
  // The documents the CLI reads (Method.cli), removed however the run ends.
  const folder = mkdtempSync(path.join(tmpdir(), 'nfv-wan-bench-'));
  try {
    for (const [instance, nat] of variants()) {
      const name = instanceName(instance, nat);
      // A Zoo network is a family of its own: a time-out there says nothing of the next network.
      const family = ZOO ? name : `${instance.shape.kind}-${nat ? 'nat' : 'plain'}`;
      const nfv = generate(instance, nat);
      writeFileSync(path.join(folder, `${name}.json`), JSON.stringify(nfv));
      const nodes = nfv.graphs.graph![0]!.node;
      const row: Row = {
        instance: name,
        family,
        pops: popsOf(instance.shape),
        // Links between PoPs: each runs through one allocation place joining two routers.
        links: nodes.filter(
          (n) =>
            !n.functionalType &&
            n.neighbour!.every((nb) => nodes.find((m) => m.name === nb.name)!.functionalType === 'FORWARDER'),
        ).length,
        requirements: nfv.propertyDefinition.property.length,
        runs: [],
      };
      rows.push(row);
    }
    // Method by method, so that a run past its budget leaves out the previous method's largest instances first.
    for (const [k, method] of METHODS.entries()) {
      for (const row of rows) {
        const skipped = (message: string) => (row.runs[k] = { outcome: 'skipped', message });
        if (outOfTime[k]!.has(row.family)) skipped('smaller one timed out');
        else if ((performance.now() - runStarted) / 1000 > RUN_BUDGET_SECONDS) skipped('run budget spent');
        else {
          if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${row.instance}: ${method.title}`);
          const run = method.cli
            ? await runCli(path.join(folder, `${row.instance}.json`), method)
            : await runChild(row.instance, method);
          if (timedOut(run)) outOfTime[k]!.add(row.family);
          row.runs[k] = run;
        }
      }
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
  if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
  const runSeconds = (performance.now() - runStarted) / 1000;
  const loadAfter = loadavg()[0]!;

  const table = new Table({ style: { head: [], border: [] } });
  const perMethod = ['s', 'process s', 'outcome', 'fw (>= bound)', 'rules (>= bound)', 'gap', 'peak MB'];
  table.push([{ content: '', colSpan: 4 }, ...METHODS.map((m) => ({ content: m.title, colSpan: perMethod.length }))]);
  table.push(['instance', 'PoPs', 'links', 'reqs', ...METHODS.flatMap(() => perMethod)]);
  const notes: string[] = [];
  for (const row of rows) {
    table.push([
      row.instance,
      row.pops,
      row.links,
      row.requirements,
      ...row.runs.flatMap((run, k) => [
        seconds(run.seconds),
        seconds(run.processSeconds),
        outcomeCell(run, METHODS[k]!, notes, `${row.instance}, ${METHODS[k]!.title}`),
        withBound(run, 'firewalls'),
        withBound(run, 'rules'),
        gapCell(run),
        run.peakMB ?? '',
      ]),
    ]);
  }
  // The Zoo's networks are all small: only the target of the small ones applies.
  const goals = targets(rows).filter((g, k) => !ZOO || k === 2);
  const lines = [
    table.toString(),
    ...notes.map((n, k) => `note ${k + 1}: ${n}`),
    '',
    ...(ZOO
      ? [`Internet Topology Zoo (CC BY 4.0) read from ${ZOO_WHERE}, largest connected part of each network.`]
      : []),
    'Targets of issue 48 (the engine as shipped):',
    ...goals.map((g) => `- ${g.target}: ${g.met ? 'met' : 'NOT MET'}; ${g.figures}`),
    '',
    `Seed ${SEED}; time limits: ${METHODS.map((m) => `${m.title} ${m.timeoutSeconds} s`).join(', ')} ` +
      `(processes killed ${GRACE_SECONDS} s after), run budget ${RUN_BUDGET_SECONDS} s; "process s" from ` +
      `starting the process to its end (${METHODS.filter((m) => m.cli)
        .map((m) => m.title)
        .join(', ')}: ` +
      '`bin/nfv simulate` on the instance as a JSON document; else a child of the bench, generation included); ' +
      'gap = 100 (rules - bound) / rules, 0 where proven. ' +
      `Whole run ${runSeconds.toFixed(0)} s; load (1 min) ${loadBefore.toFixed(2)} before, ` +
      `${loadAfter.toFixed(2)} after.`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  writeFileSync(
    path.join(out, `${file}.md`),
    `# ${ZOO ? 'Internet Topology Zoo' : 'WAN'} benchmark (${new Date().toISOString()})\n\n` +
      `\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
  );
  const methods = METHODS.map(({ key, title, options, timeoutSeconds }) => ({ key, title, options, timeoutSeconds }));
  const summary = {
    seed: SEED,
    runBudgetSeconds: RUN_BUDGET_SECONDS,
    methods,
    runSeconds,
    load: [loadBefore, loadAfter],
    targets: goals,
    rows,
  };
  writeFileSync(path.join(out, `${file}.json`), `${JSON.stringify(summary, null, 2)}\n`);
}

await main();
