/**
 * npm run bench:emulate: the engine's answers of generated networks (`topology.ts`, the generator of
 * `npm run bench:scale`, seed 1, plain and with NAT and ports) of 200 nodes (130 requirements) and of 1,200 nodes
 * (800 requirements, the largest scale inputs) built in namespaces, probed and removed by `nfv emulate`
 * (src/deploy/emulate). Each answer is simulated here first (its seconds shown, not counted), written to
 * bench-results/emulate/ (NFV_EMULATE_REUSE=1 takes the answer found there instead), and emulated in a child process
 * of its own, so that the peak memory is the emulation's.
 *
 * Per answer: nodes, requirements, probes, whether the kernel agrees with every claim, the seconds of each phase
 * (plan: the plan worked out in Node; build: namespaces, veths, addresses, routes, firewalls; probe; counters: the
 * deciding rules read; remove: the sandbox gone), the total against the target (15 s at 200 nodes, 60 s at
 * 1,200), CPU seconds (Node, and the prober with its children) and peak memory (Node, prober). Writes
 * bench-results/emulate.{md,json}. Wall seconds depend on the machine's load; the load average is printed.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import { blameRequests, planEmulation, readVerdicts, runPlan } from '../deploy/emulate/index.js';
import { simulate } from '../engine/simulate.js';
import type { NFV } from '../model/types.js';
import { REPO } from './reference.js';
import { generateTopology } from './topology.js';

const INSTANCES = [
  { nodes: 200, requirements: 130, nat: false, target: 15 },
  { nodes: 200, requirements: 130, nat: true, target: 15 },
  { nodes: 1200, requirements: 800, nat: false, target: 60 },
  { nodes: 1200, requirements: 800, nat: true, target: 60 },
];
const SEED = 1;
const PHASES = ['plan', 'build', 'probe', 'counters', 'remove'] as const;

/** What the child answers for one emulation. */
interface Measured {
  namespaces: number;
  links: number;
  firewalls: number;
  probes: number;
  requirements: number;
  disagree: number;
  seconds: Record<(typeof PHASES)[number], number>;
  total: number;
  nodeCpu: number;
  proberCpu: number;
  nodeMB: number;
  proberMB: number;
}

/** The child: emulates one answer file and prints what it measured as one line of JSON. */
async function measure(file: string): Promise<Measured> {
  const nfv = JSON.parse(readFileSync(file, 'utf8')) as NFV;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const plan = planEmulation(nfv);
  const marks: Record<string, number> = { planned: performance.now() };
  const ran = await runPlan(plan, (a) => blameRequests(plan, a), {
    progress: (phase) => (marks[phase] = performance.now()),
  });
  const ended = performance.now();
  const report = readVerdicts(plan, ran.arrived, ran.blamed);
  const used = process.cpuUsage(cpu);
  const s = (a: number, b: number) => (b - a) / 1000;
  return {
    namespaces: report.namespaces,
    links: report.links,
    firewalls: report.firewalls,
    probes: report.probes,
    requirements: report.requirements.length,
    disagree: report.requirements.filter((r) => !r.agree).length,
    seconds: {
      plan: s(started, marks.planned!),
      build: s(marks.planned!, marks.probing!),
      probe: s(marks.probing!, marks['reading counters']!),
      counters: s(marks['reading counters']!, marks.removing!),
      remove: s(marks.removing!, ended),
    },
    total: s(started, ended),
    nodeCpu: (used.user + used.system) / 1e6,
    proberCpu: ran.usage ? ran.usage.cpuSeconds + ran.usage.childCpuSeconds : NaN,
    nodeMB: Math.round(process.resourceUsage().maxRSS / 1024),
    proberMB: ran.usage ? Math.round(ran.usage.peakKB / 1024) : NaN,
  };
}

function inChild(file: string): Promise<Measured> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--one', file], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (t: string) => (out += t));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out) as Measured) : reject(new Error(`emulation of ${file}: exit ${code}`)),
    );
  });
}

async function main(): Promise<void> {
  const out = path.join(REPO, 'bench-results');
  const answers = path.join(out, 'emulate');
  mkdirSync(answers, { recursive: true });
  const load = () => loadavg()[0]!.toFixed(1);
  const table = new Table({
    head: [
      'instance',
      'nodes',
      'reqs',
      'probes',
      'agree',
      ...PHASES.map((p) => `${p} s`),
      'total s',
      'target',
      'CPU s',
    ],
    style: { head: [], border: [] },
  });
  const rows: (Measured & { instance: string; nodes: number; simulateSeconds: number; load: string })[] = [];
  const loads = [load()];
  for (const spec of INSTANCES) {
    const instance = `n${spec.nodes}-${spec.nat ? 'nat+ports' : 'plain'}-s${SEED}`;
    if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${instance}: simulating`);
    const file = path.join(answers, `${instance}.result.json`);
    let result: NFV;
    let simulateSeconds = NaN;
    if (process.env.NFV_EMULATE_REUSE === '1' && existsSync(file)) {
      // The answer of an earlier run (the same generator and seed): the engine is not what is measured here.
      result = JSON.parse(readFileSync(file, 'utf8')) as NFV;
    } else {
      const nfv = generateTopology({ ...spec, seed: SEED });
      const simulated = performance.now();
      // Time enough for the answer on a busy machine.
      result = (await simulate(nfv, { timeoutSeconds: 600 })).nfv;
      simulateSeconds = (performance.now() - simulated) / 1000;
      writeFileSync(file, JSON.stringify(result));
    }
    if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${instance}: emulating`);
    const m = await inChild(file);
    loads.push(load());
    const nodes = result.graphs.graph![0]!.node.length;
    rows.push({ instance, nodes, simulateSeconds, load: loads.at(-1)!, ...m });
    // Each answer as it comes: a run that fails later keeps the ones before.
    writeFileSync(path.join(out, 'emulate.json'), `${JSON.stringify({ rows }, null, 2)}\n`);
    table.push([
      instance,
      nodes,
      m.requirements,
      m.probes,
      m.disagree ? `NO (${m.disagree})` : 'yes',
      ...PHASES.map((p) => m.seconds[p].toFixed(2)),
      m.total.toFixed(2),
      `${m.total < spec.target ? 'met' : 'NOT met'} (< ${spec.target})`,
      `${m.nodeCpu.toFixed(1)} + ${m.proberCpu.toFixed(1)}`,
    ]);
  }
  if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
  const lines = [
    table.toString(),
    '',
    'CPU s: Node (plan, verdicts) + the prober with its children (ip); peak memory (MB, Node / prober): ' +
      rows.map((r) => `${r.instance} ${r.nodeMB} / ${r.proberMB}`).join(', '),
    `simulate s (not counted; - when NFV_EMULATE_REUSE=1 reused an answer): ` +
      rows
        .map((r) => `${r.instance} ${Number.isNaN(r.simulateSeconds) ? '-' : r.simulateSeconds.toFixed(1)}`)
        .join(', '),
    `load average (1 min) before and after each answer: ${loads.join(', ')}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  writeFileSync(
    path.join(out, 'emulate.md'),
    `# Emulation benchmark (${new Date().toISOString()})\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
  );
  writeFileSync(path.join(out, 'emulate.json'), `${JSON.stringify({ rows }, null, 2)}\n`);
}

if (process.argv[2] === '--one') process.stdout.write(`${JSON.stringify(await measure(process.argv[3]!))}\n`);
else await main();
process.exit(0);
