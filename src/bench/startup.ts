/**
 * npm run bench:startup: how long non-solving commands take to start and answer, beside `node -e 0` measured in
 * the same run (medians of 15 processes). Prints a table and writes bench-results/startup.{md,json}.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Table from 'cli-table3';
import { REPO, median } from './reference.js';

const RUNS = 15;
const BIN = path.join(REPO, 'bin', 'nfv');
const ws = mkdtempSync(path.join(tmpdir(), 'nfv-bench-startup-'));
const env = { ...process.env, NFV_WORKSPACE: ws, NO_COLOR: '1' };

function seconds(args: string[]): number {
  const times: number[] = [];
  for (let k = 0; k < RUNS; k++) {
    const t0 = performance.now();
    spawnSync(process.execPath, args, { env, stdio: 'ignore' });
    times.push((performance.now() - t0) / 1000);
  }
  return median(times);
}

const baseline = seconds(['-e', '0']);
const commands: [string, string[]][] = [
  ['nfv --version', ['--version']],
  ['nfv graphs list', ['graphs', 'list', '--format', 'json']],
  ['nfv fwd nodes list', ['fwd', 'nodes', 'list']],
  ['nfv simulations list', ['simulations', 'list']],
  ['nfv inventory resources', ['inventory', 'resources']],
  ['nfv simulate --help', ['simulate', '--help']],
];
const table = new Table({ head: ['command', 'seconds', 'x node -e 0'], style: { head: [], border: [] } });
const rows = commands.map(([name, args]) => {
  const s = seconds([BIN, ...args]);
  table.push([name, s.toFixed(3), `${(s / baseline).toFixed(2)}x`]);
  return { command: name, seconds: s, ratio: s / baseline };
});
rmSync(ws, { recursive: true, force: true });
const report = [`start-up, medians of ${RUNS} processes; node -e 0: ${baseline.toFixed(3)} s`, table.toString()];
process.stdout.write(`${report.join('\n')}\n`);
const out = path.join(REPO, 'bench-results');
mkdirSync(out, { recursive: true });
writeFileSync(
  path.join(out, 'startup.md'),
  `# Start-up (${new Date().toISOString()})\n\n\`\`\`\n${report.join('\n')}\n\`\`\`\n`,
);
writeFileSync(path.join(out, 'startup.json'), `${JSON.stringify({ baseline, rows }, null, 2)}\n`);
process.exit(0);
