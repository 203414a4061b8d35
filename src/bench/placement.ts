/**
 * npm run bench:placement: the placement step (issue 22) on generated substrates and graphs in the style of the
 * VEREFOO inputs with Hosts (`substrate.ts`, seeded), three seeds per size, each against its target:
 *   50 hosts: proven optimal in under 1 s;
 *   200 hosts, about 60 nodes to place: proven optimal or within 1 host of the lower bound, in under 3 s;
 *   1,000 hosts, about 170 nodes: placed in under 10 s, with the gap to the lower bound.
 * The search is bounded by its work (PLACEMENT_EFFORT), so that an answer is the same on any machine; the clock only
 * stops it, at ten times its target's time (a row that reaches that says so). Beside it, the same graph and
 * substrate as a whole simulation (requirements per chain, so that the engine allocates first): its security
 * solve's seconds and its placement's, in the same run. Prints one table (and memory: resident set and heap after
 * each instance, the process's peak) and writes it to bench-results/placement.md. Every answer is re-checked here
 * for its accounts (capacity per host within bounds) so a fast wrong answer cannot pass unseen.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Table from 'cli-table3';
import { definePlacement, placeNodes } from '../engine/placement/index.js';
import { SolverTimeout } from '../engine/solving/work.js';
import { simulate } from '../engine/simulate.js';
import { REPO, median } from './reference.js';
import { generateSubstrate } from './substrate.js';

interface Size {
  hosts: number;
  chains: number;
  seconds: number;
  target: string;
  met: (o: { seconds: number; optimal: boolean; gap: number }) => boolean;
}

const SIZES: Size[] = [
  { hosts: 50, chains: 6, seconds: 1, target: 'proven optimal < 1 s', met: (o) => o.optimal && o.seconds < 1 },
  {
    hosts: 200,
    chains: 16,
    seconds: 3,
    target: 'optimal or gap <= 1 host, < 3 s',
    met: (o) => (o.optimal || o.gap <= 1) && o.seconds < 3,
  },
  { hosts: 1000, chains: 45, seconds: 10, target: 'placed < 10 s', met: (o) => o.seconds < 10 },
];
const SEEDS = (process.env.NFV_PLACEMENT_SEEDS ?? '1,2,3').split(',').map(Number);

const mb = (bytes: number) => Math.round(bytes / 2 ** 20);
const table = new Table({
  head: [
    'hosts',
    'seed',
    'nodes',
    's',
    'active (bound)',
    'gap',
    'latency (bound)',
    'optimal',
    'target',
    'sim: security s',
    'sim: placing s',
    'RSS MB',
    'heap MB',
  ],
  style: { head: [], border: [] },
});
interface Row {
  hosts: number;
  seconds: number;
  gap: number;
  met: boolean;
}
const rows: Row[] = [];

for (const size of SIZES) {
  for (const seed of SEEDS) {
    if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${size.hosts} hosts, seed ${seed}`);
    const { input, simulation, placed } = generateSubstrate({ hosts: size.hosts, chains: size.chains, seed });
    const started = performance.now();
    const deadline = Date.now() + size.seconds * 10_000;
    const outcome = (() => {
      try {
        return placeNodes(definePlacement(input), { deadline });
      } catch (e) {
        if (e instanceof SolverTimeout) return { status: 'stopped at 10x the target' as const };
        throw e;
      }
    })();
    const seconds = (performance.now() - started) / 1000;
    const memory = process.memoryUsage();
    if (outcome.status !== 'placed') {
      table.push([size.hosts, seed, placed, seconds.toFixed(2), outcome.status, '', '', '', 'missed', '', '', '', '']);
      rows.push({ hosts: size.hosts, seconds, gap: Infinity, met: false });
      continue;
    }
    const overfull = outcome.hosts.filter(
      (h) => h.cores[0] > h.cores[1] || h.memory[0] > h.memory[1] || h.diskStorage[0] > h.diskStorage[1],
    );
    if (overfull.length) throw new Error(`seed ${seed}: ${overfull[0]!.host} is over capacity`);
    const { objective: o, lowerBound: lb } = outcome;
    const gap = o.activeHosts - lb.activeHosts;
    const met = size.met({ seconds, optimal: outcome.optimal, gap });
    rows.push({ hosts: size.hosts, seconds, gap, met });
    const whole = await simulate(simulation);
    if (whole.report.hosting.status !== 'placed') throw new Error(`seed ${seed}: the simulation was not placed`);
    table.push([
      size.hosts,
      seed,
      outcome.nodes.length,
      seconds.toFixed(2),
      `${o.activeHosts} (${lb.activeHosts})`,
      gap,
      `${o.totalLatency} (${lb.totalLatency})`,
      String(outcome.optimal),
      `${met ? 'met' : 'MISSED'}: ${size.target}`,
      whole.report.timings.solving.toFixed(3),
      whole.report.timings.placing.toFixed(3),
      mb(memory.rss),
      mb(memory.heapUsed),
    ]);
  }
}
if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');

const summary = SIZES.map((size) => {
  const mine = rows.filter((r) => r.hosts === size.hosts);
  const met = mine.filter((r) => r.met).length;
  return (
    `${size.hosts} hosts: median ${median(mine.map((r) => r.seconds)).toFixed(2)} s, ` +
    `largest gap ${Math.max(...mine.map((r) => r.gap))} host(s), target met ${met} of ${mine.length}`
  );
});
const lines = [
  table.toString(),
  '',
  ...summary,
  `peak memory of the process ${Math.round(process.resourceUsage().maxRSS / 1024)} MB`,
];
process.stdout.write(`${lines.join('\n')}\n`);
const out = path.join(REPO, 'bench-results');
mkdirSync(out, { recursive: true });
writeFileSync(
  path.join(out, 'placement.md'),
  `# Placement benchmark (${new Date().toISOString()})\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
);
