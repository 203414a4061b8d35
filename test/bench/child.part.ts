/**
 * src/bench/child.ts: a command run as an operator runs it (bench:wan's shipped engine is `bin/nfv simulate`), and
 * the summary line it writes on stderr read back into the counts, bounds and proof of its report.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { runCommand, simulateSummary } from '../../src/bench/child.js';
import { generateWan } from '../../src/bench/wan.js';
import { simulate } from '../../src/engine/simulate.js';
import { reportSummary } from '../../src/ops/network/simulations.js';
import { NFV_ARGV, scratch } from '../helpers.js';

t.test('bin/nfv simulate run as a command: its summary read back as the report in process says', async (t) => {
  const dir = await scratch(t);
  const nfv = generateWan({ shape: { kind: 'wan', pops: 16 }, nat: true, seed: 1 });
  const file = path.join(dir, 'wan-16-nat.json');
  await writeFile(file, JSON.stringify(nfv));
  const end = await runCommand(NFV_ARGV[0]!, [...NFV_ARGV.slice(1), 'simulate', file, '--timeout', '60'], 120);
  t.equal(end.code, 0, end.stderr);
  t.notOk(end.killed);
  t.ok(end.processSeconds > 0 && end.peakMB !== undefined && end.peakMB > 0, 'whole seconds and peak memory');
  const said = simulateSummary(end.stderr);
  const { report } = await simulate(structuredClone(nfv), { timeoutSeconds: 60 });
  t.ok(said, end.stderr);
  t.match(said, {
    verdict: report.verdict,
    held: `${report.satisfied}/${report.properties}`,
    firewalls: report.firewalls,
    rules: report.rules,
    optimal: report.optimal,
    bound: { firewalls: report.firewalls, rules: report.rules },
  });
  t.ok(said!.seconds > 0 && said!.seconds <= end.processSeconds, 'the seconds the CLI adds');
});

t.test('a summary not proven minimal: each bound named below its count, or the count itself', async (t) => {
  const nfv = generateWan({ shape: { kind: 'ring', pops: 6 }, nat: false, seed: 2 });
  const { report } = await simulate(nfv, { timeoutSeconds: 60 });
  const line = (r: typeof report) => `${r.verdict}: ${reportSummary(r)}; 1.25 s`;
  const open = { ...report, optimal: false, lowerBound: { ...report.lowerBound!, firewalls: 1, rules: 0 } };
  t.match(simulateSummary(`note before\n${line(open)}\n  not enforceable: #3 ...`), {
    firewalls: report.firewalls,
    rules: report.rules,
    optimal: false,
    bound: { firewalls: 1, rules: 0 },
    seconds: 1.25,
  });
  const atBound = { ...open, lowerBound: { ...open.lowerBound, firewalls: report.firewalls, rules: report.rules } };
  t.match(simulateSummary(line(atBound)), {
    optimal: false,
    bound: { firewalls: report.firewalls, rules: report.rules },
  });
  t.equal(simulateSummary('nfv: file x.json: not a document'), undefined);
});

t.test('a command past its limit is killed', async (t) => {
  const end = await runCommand(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], 0.5);
  t.ok(end.killed);
  t.ok(end.processSeconds >= 0.5);
});
