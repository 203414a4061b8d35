/**
 * npm run bench:rule-gap (issue 48 items 2-3): where the rule gap of a WAN's answer is. For each case (a Zoo network
 * or a generated ring or WAN, built as bench:wan builds them, seed 1, plain or with NATs) it prints the engine's
 * answer as shipped (firewalls, rules, proven or the rules' lower bound, CPU seconds), and the true optimum over the
 * same candidate rules: the engine is run again offline with every component encoded (no ENCODING_LIMIT) and
 * NFV_RULE_GAP_WORK ticks of proof work (default 100 M), and each candidate formula it builds for a component's
 * answer (AllocationTuning.candidates: whole classes, before it is solved) is given to HiGHS's MIP (the `highs`
 * package) as 0-1 constraints, minimising new firewalls, then changes, then rules, then optional firewalls, with
 * weights that make the order strict. The MIP is limited by branch-and-bound nodes (NFV_RULE_GAP_NODES, default
 * 100,000), not time; where it stops short, its incumbent is printed with "?". So the optimum is over the candidates
 * pruned by the optima before the rules (knownOptima, sound), exactly what "proven minimal" covers for whole classes.
 *
 * Cases: the arguments (a Zoo name such as Garr199901, ring-N or wan-N, each followed by :nat for the NAT variant),
 * else the default set below. The Zoo is read from NFV_ZOO or the read-only mirror. Offline only: seconds to minutes
 * per case; the shipped engine never calls a MIP. Prints a Markdown table on stdout.
 */
import { fileURLToPath } from 'node:url';
import type highsTypes from 'highs';
import { simulate, type SimulateOptions } from '../engine/simulate.js';
import type { MaxSatProblem } from '../engine/solving/maxsat.js';
import { generateWan, type WanShape } from './wan.js';
import { openZoo, ZOO_MIRROR } from './zoo.js';

const DEFAULT_CASES = [
  'Abilene',
  'Abilene:nat',
  'Garr199901',
  'Garr199901:nat',
  'Belnet2008',
  'Belnet2008:nat',
  'ring-24',
  'Geant2012',
];
const OFFLINE_WORK = Number(process.env.NFV_RULE_GAP_WORK ?? 100_000_000);
const MIP_NODES = Number(process.env.NFV_RULE_GAP_NODES ?? 100_000);
/** A problem's soft groups (allocate.ts, without the requirements' group): their order in the objective. */
const [FIREWALLS, RULES] = [0, 2];

function shapeOf(name: string): WanShape {
  const generated = /^(ring|wan)-(\d+)$/.exec(name);
  if (generated) return { kind: generated[1] as 'ring' | 'wan', pops: Number(generated[2]) };
  const zoo = openZoo(process.env.NFV_ZOO ?? ZOO_MIRROR);
  if (!zoo) throw new Error(`no Internet Topology Zoo at ${process.env.NFV_ZOO ?? ZOO_MIRROR}`);
  if (!zoo.names.includes(name)) throw new Error(`case ${name}: not a Zoo network, ring-N or wan-N`);
  return { kind: 'graph', name, ...zoo.read(name) };
}

/**
 * The problem as a 0-1 program in CPLEX LP text: a clause is a row (its true literals at least 1), each soft literal
 * costs its group's weight when false, a group's weight more than all later groups' soft literals can cost.
 */
export function mipText(problem: MaxSatProblem): string {
  const weights: number[] = [];
  let weight = 1;
  for (let g = problem.soft.length - 1; g >= 0; g--) {
    weights[g] = weight;
    weight *= problem.soft[g]!.length + 1;
  }
  // cost = sum of w (1 - value(l)); value(-v) = 1 - x_v. The constant is left out of the objective.
  const coefficient = new Map<number, number>();
  problem.soft.forEach((group, g) => {
    for (const l of group)
      coefficient.set(Math.abs(l), (coefficient.get(Math.abs(l)) ?? 0) + (l > 0 ? -1 : 1) * weights[g]!);
  });
  const terms = [...coefficient]
    .filter(([, c]) => c !== 0)
    .map(([v, c]) => `${c < 0 ? '-' : '+'} ${Math.abs(c)} x${v}`);
  const lines = ['Minimize', ` obj: ${terms.join(' ') || '0 x1'}`, 'Subject To'];
  for (const [k, clause] of problem.hard.list().entries()) {
    const negated = clause.filter((l) => l < 0).length;
    const row = clause.map((l) => (l > 0 ? `+ x${l}` : `- x${-l}`)).join(' ') || '0 x1';
    lines.push(` c${k}: ${row} >= ${1 - negated}`);
  }
  lines.push('Binary');
  for (let v = 1; v <= problem.variables; v++) lines.push(` x${v}`);
  return [...lines, 'End', ''].join('\n');
}

export interface Optimum {
  /** Per soft group, how many of its literals the MIP's answer leaves false. */
  cost: number[];
  optimal: boolean;
  cpu: number;
}

/** The package's loader, as engine/solving/highs.ts loads it (as CommonJS, a default of the default). */
let highs: ReturnType<typeof highsTypes.default> | undefined;
const loadHighs = () => (highs ??= import('highs').then((m) => (m.default as unknown as typeof highsTypes.default)()));

/** The problem's lexicographic optimum by HiGHS's MIP, within `nodes` branch-and-bound nodes. */
export async function optimum(problem: MaxSatProblem, nodes = MIP_NODES): Promise<Optimum> {
  const solver = await loadHighs();
  const before = process.cpuUsage();
  const found = solver.solve(mipText(problem), {
    output_flag: false,
    threads: 1,
    random_seed: 0,
    mip_max_nodes: nodes,
  });
  const used = process.cpuUsage(before);
  const columns = found.Columns as Record<string, { Primal?: number }>;
  const value = (l: number) => {
    const x = (columns[`x${Math.abs(l)}`]?.Primal ?? 0) > 0.5;
    return l > 0 ? x : !x;
  };
  return {
    cost: problem.soft.map((group) => group.filter((l) => !value(l)).length),
    optimal: found.Status === 'Optimal',
    cpu: (used.user + used.system) / 1e6,
  };
}

const cpuOf = async <T>(run: () => Promise<T>): Promise<[T, number]> => {
  const before = process.cpuUsage();
  const result = await run();
  const used = process.cpuUsage(before);
  return [result, (used.user + used.system) / 1e6];
};

async function main(): Promise<void> {
  const cases = process.argv.length > 2 ? process.argv.slice(2) : DEFAULT_CASES;
  console.log(
    '| case | PoPs | requirements | answer: firewalls / rules | rules bound | answer CPU s |' +
      ' optimum over the candidates: firewalls / rules | formula: variables / clauses | MIP CPU s |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const name of cases) {
    const [network, variant] = name.split(':');
    const shape = shapeOf(network!);
    const nfv = generateWan({ shape, nat: variant === 'nat', seed: 1 });
    const requirements = nfv.propertyDefinition?.property.length ?? 0;
    const [shipped, cpu] = await cpuOf(() => simulate(nfv, { timeoutSeconds: 600 }));
    const formulas: MaxSatProblem[] = [];
    const offline: SimulateOptions = {
      timeoutSeconds: 600,
      proofWork: OFFLINE_WORK,
      tuning: {
        decompose: true,
        collapse: true,
        prune: true,
        encodingLimit: Infinity,
        candidates: (problem, _members, proofOnly) => void (proofOnly || formulas.push(problem)),
      },
    };
    const exact = (await simulate(nfv, offline)).report;
    const optima: Optimum[] = [];
    for (const problem of formulas) optima.push(await optimum(problem));
    const r = shipped.report;
    const sum = (group: number) => optima.reduce((s, o) => s + o.cost[group]!, 0);
    const sure = optima.every((o) => o.optimal) ? '' : '?';
    const found =
      formulas.length === 0
        ? `none built (${exact.firewalls} / ${exact.rules}, ${exact.optimal ? 'proven' : 'not proven'})`
        : `${sum(FIREWALLS)} / ${sum(RULES)}${sure}`;
    const size = formulas.map((p) => `${p.variables} / ${p.hard.length}`).join(', ');
    const mipCpu = optima.reduce((s, o) => s + o.cpu, 0);
    console.log(
      `| ${name} | ${shape.kind === 'mesh' ? shape.rows * shape.columns : shape.pops} | ${requirements} | ` +
        `${r.firewalls} / ${r.rules} | ${r.optimal ? 'proven' : String(r.lowerBound?.rules ?? '?')} | ` +
        `${cpu.toFixed(1)} | ${found} | ${size} | ${mipCpu.toFixed(1)} |`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
