/**
 * npm run bench:startup: how long non-solving commands take to start and answer, in wall time and in CPU time (user
 * plus system, which a busy machine does not inflate as much), beside `node -e 0` measured in the same run (medians
 * of 15 processes). Prints a table and writes bench-results/startup.{md,json}.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Table from 'cli-table3';
import { NFV_BIN, REPO, median, withThisNode } from './reference.js';

const RUNS = 15;
const ws = mkdtempSync(path.join(tmpdir(), 'nfv-bench-startup-'));
const env = withThisNode({ ...process.env, NFV_WORKSPACE: ws, NO_COLOR: '1' });

/** CPU seconds (user + system) of one process, as bash's `times` reports its children. */
function cpuSeconds(command: string[]): number {
  const out = spawnSync('bash', ['-c', '"$@" >/dev/null 2>&1; times', 'bash', ...command], {
    env,
    encoding: 'utf8',
  }).stdout;
  const children = out.trim().split('\n').at(-1) ?? '';
  const [user, system] = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
  return (user ?? NaN) + (system ?? NaN);
}

/** Medians of wall and CPU seconds over RUNS processes each. */
function seconds(command: string[]): { wall: number; cpu: number } {
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let k = 0; k < RUNS; k++) {
    const t0 = performance.now();
    spawnSync(command[0]!, command.slice(1), { env, stdio: 'ignore' });
    walls.push((performance.now() - t0) / 1000);
    cpus.push(cpuSeconds(command));
  }
  return { wall: median(walls), cpu: median(cpus) };
}

const baseline = seconds([process.execPath, '-e', '0']);
const commands: [string, string[]][] = [
  ['nfv --version', ['--version']],
  ['nfv graphs list', ['graphs', 'list', '--format', 'json']],
  ['nfv fwd nodes list', ['fwd', 'nodes', 'list']],
  ['nfv simulations list', ['simulations', 'list']],
  ['nfv inventory resources', ['inventory', 'resources']],
  ['nfv simulate --help', ['simulate', '--help']],
];
const table = new Table({
  head: ['command', 'seconds', 'x node -e 0', 'CPU seconds', 'CPU x node -e 0'],
  style: { head: [], border: [] },
});
const rows = commands.map(([name, args]) => {
  const s = seconds([NFV_BIN, ...args]);
  const row = { command: name, ...s, ratio: s.wall / baseline.wall, cpuRatio: s.cpu / baseline.cpu };
  table.push([name, s.wall.toFixed(3), `${row.ratio.toFixed(2)}x`, s.cpu.toFixed(3), `${row.cpuRatio.toFixed(2)}x`]);
  return row;
});
rmSync(ws, { recursive: true, force: true });
const report = [
  `start-up, medians of ${RUNS} processes; node -e 0: ${baseline.wall.toFixed(3)} s, CPU ${baseline.cpu.toFixed(3)} s`,
  table.toString(),
];
process.stdout.write(`${report.join('\n')}\n`);
const out = path.join(REPO, 'bench-results');
mkdirSync(out, { recursive: true });
writeFileSync(
  path.join(out, 'startup.md'),
  `# Start-up (${new Date().toISOString()})\n\n\`\`\`\n${report.join('\n')}\n\`\`\`\n`,
);
writeFileSync(path.join(out, 'startup.json'), `${JSON.stringify({ baseline, rows }, null, 2)}\n`);
process.exit(0);
