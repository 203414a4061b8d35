/**
 * npm run bench:scale: generated networks of 150, 300, 600 and 1,200 nodes (100 to 800 requirements), plain and
 * with NAT and ports, three seeds each, solved in one process with the default limits. Prints seconds, firewalls,
 * rules, whether the answer was proven minimal, the phase that took longest and the process's peak memory per
 * instance, then the median time per size and its growth from size to size. Writes bench-results/scale.{md,json}
 * and each answer to bench-results/scale/, where the test's evaluator re-checks them (see package.json).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Table from 'cli-table3';
import { simulate } from '../engine/simulate.js';
import { generateTopology } from './topology.js';
import { REPO, median } from './reference.js';

const SIZES = [
  { nodes: 150, requirements: 100 },
  { nodes: 300, requirements: 200 },
  { nodes: 600, requirements: 400 },
  { nodes: 1200, requirements: 800 },
];
const SEEDS = (process.env.NFV_SCALE_SEEDS ?? '1,2,3').split(',').map(Number);
const out = path.join(REPO, 'bench-results');
const answers = path.join(out, 'scale');
rmSync(answers, { recursive: true, force: true });
mkdirSync(answers, { recursive: true });

// Z3 initialises once per process; not part of any figure.
await simulate(generateTopology({ nodes: 20, requirements: 5, nat: false, seed: 1 }));

interface Row {
  instance: string;
  nodes: number;
  requirements: number;
  variant: string;
  seconds: number;
  verdict: string;
  held: string;
  firewalls: number;
  placed: number;
  rules: number;
  optimal: boolean;
  slowest: string;
  peakMB: number;
}
const rows: Row[] = [];
const mb = () => Math.round(process.resourceUsage().maxRSS / 1024);
const table = new Table({
  head: ['instance', 'nodes', 'reqs', 's', 'verdict', 'held', 'fw (placed)', 'rules', 'optimal', 'slowest', 'peak MB'],
  style: { head: [], border: [] },
});
for (const size of SIZES) {
  for (const nat of [false, true]) {
    for (const seed of SEEDS) {
      const variant = nat ? 'nat+ports' : 'plain';
      const instance = `n${size.nodes}-${variant}-s${seed}`;
      if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${instance}`);
      const nfv = generateTopology({ ...size, nat, seed });
      const started = performance.now();
      const { nfv: result, report } = await simulate(nfv);
      const seconds = (performance.now() - started) / 1000;
      writeFileSync(path.join(answers, `${instance}.result.json`), JSON.stringify(result));
      const t = report.timings;
      const phases = { expansion: t.expansion, paths: t.paths, flows: t.flows, solving: t.solving };
      const slowest = Object.entries(phases).sort((a, b) => b[1] - a[1])[0]!;
      const row: Row = {
        instance,
        nodes: nfv.graphs.graph![0]!.node.length,
        requirements: report.properties,
        variant,
        seconds,
        verdict: report.verdict,
        held: `${report.satisfied}/${report.properties}`,
        firewalls: report.firewalls,
        placed: report.allocated,
        rules: report.rules,
        optimal: report.optimal,
        slowest: `${slowest[0]} ${slowest[1].toFixed(2)}`,
        peakMB: mb(),
      };
      rows.push(row);
      table.push([
        instance,
        row.nodes,
        row.requirements,
        seconds.toFixed(2),
        row.verdict,
        row.held,
        `${row.firewalls} (${row.placed})`,
        row.rules,
        String(row.optimal),
        row.slowest,
        row.peakMB,
      ]);
    }
  }
}
if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');

const medians = SIZES.map((s) =>
  median(rows.filter((r) => r.instance.startsWith(`n${s.nodes}-`)).map((r) => r.seconds)),
);
const growth = SIZES.map((s, k) => {
  const step = k === 0 ? '' : `, ${(medians[k]! / medians[k - 1]!).toFixed(2)}x the size before`;
  return `${s.nodes} nodes: median ${medians[k]!.toFixed(2)} s${step}`;
});
const worst = Math.max(...rows.map((r) => r.seconds));
const lines = [
  table.toString(),
  '',
  ...growth,
  `300 -> 1200 nodes: median time ${(medians[3]! / medians[1]!).toFixed(2)}x; ` +
    `slowest instance ${worst.toFixed(2)} s; ` +
    `peak memory ${Math.max(...rows.map((r) => r.peakMB))} MB; ` +
    `${rows.filter((r) => r.optimal).length} of ${rows.length} answers proven minimal`,
];
process.stdout.write(`${lines.join('\n')}\n`);
writeFileSync(
  path.join(out, 'scale.md'),
  `# Scale benchmark (${new Date().toISOString()})\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
);
writeFileSync(path.join(out, 'scale.json'), `${JSON.stringify({ rows, medians }, null, 2)}\n`);
process.exit(0);
