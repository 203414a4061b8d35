/**
 * npm run bench:process: the whole `nfv simulate FILE` process, start included, on each of VEREFOO's
 * RegressioneTestCases (median of 3 processes each), beside `node -e 0` and `nfv --version` measured in the same run.
 * Small inputs are answered by our own exact solver without loading Z3, so the process costs little more than
 * starting. Prints a table and writes bench-results/process.{md,json}.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Table from 'cli-table3';
import { NFV_BIN, REPO, TESTFILES, median, withThisNode, xmlFilesUnder } from './reference.js';

const RUNS = 3;
const ws = mkdtempSync(path.join(tmpdir(), 'nfv-bench-process-'));
const env = withThisNode({ ...process.env, NFV_WORKSPACE: ws, NO_COLOR: '1' });

function seconds(
  [command, ...args]: string[],
  runs = RUNS,
): { seconds: number; status: number | null; summary: string } {
  const times: number[] = [];
  let last: ReturnType<typeof spawnSync> | undefined;
  for (let k = 0; k < runs; k++) {
    const t0 = performance.now();
    last = spawnSync(command!, args, { env, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
    times.push((performance.now() - t0) / 1000);
  }
  return { seconds: median(times), status: last!.status, summary: String(last!.stderr).split('\n')[0] ?? '' };
}

const node = seconds([process.execPath, '-e', '0'], 15).seconds;
const version = seconds([NFV_BIN, '--version'], 15).seconds;
const table = new Table({
  head: ['input', 'seconds', 'x node -e 0', 'exit', 'answer'],
  style: { head: [], border: [] },
});
const rows = xmlFilesUnder(path.join(TESTFILES, 'RegressioneTestCases')).map((file) => {
  const input = path.basename(file);
  const run = seconds([NFV_BIN, 'simulate', file]);
  table.push([input, run.seconds.toFixed(3), `${(run.seconds / node).toFixed(2)}x`, run.status, run.summary]);
  return { input, ...run };
});
rmSync(ws, { recursive: true, force: true });
const all = rows.map((r) => r.seconds);
const summary = {
  inputs: rows.length,
  median: median(all),
  min: Math.min(...all),
  max: Math.max(...all),
  node,
  version,
  // Exit 1 is an UNSAT answer (some requirement cannot hold); anything else is a failure.
  failed: rows.filter((r) => r.status !== 0 && r.status !== 1).map((r) => r.input),
};
const report = [
  `nfv simulate, whole process, medians of ${RUNS} runs; node -e 0: ${node.toFixed(3)} s; ` +
    `nfv --version: ${version.toFixed(3)} s`,
  table.toString(),
  `${summary.inputs} inputs: median ${summary.median.toFixed(3)} s ` +
    `(${(summary.median / node).toFixed(2)}x node -e 0), ` +
    `min ${summary.min.toFixed(3)} s, max ${summary.max.toFixed(3)} s; failed: ${summary.failed.length}`,
];
process.stdout.write(`${report.join('\n')}\n`);
const out = path.join(REPO, 'bench-results');
mkdirSync(out, { recursive: true });
writeFileSync(
  path.join(out, 'process.md'),
  `# Whole-process simulate (${new Date().toISOString()})\n\n\`\`\`\n${report.join('\n')}\n\`\`\`\n`,
);
writeFileSync(path.join(out, 'process.json'), `${JSON.stringify({ summary, rows }, null, 2)}\n`);
process.exit(summary.failed.length ? 1 : 0);
