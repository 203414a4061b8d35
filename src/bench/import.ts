/**
 * npm run bench:import: import and lint of a generated iptables-save dump of 5,000 lines through 65 chains, the size
 * of the largest public dump studied (firewall-io.md B.9: 4,721 lines reached through 65 chains, 1,712 RETURNs);
 * target under 5 s for both. The dump (seeded) has a FORWARD chain that jumps by destination /24 into 64 user
 * chains, each with ACCEPT and DROP lines on hosts and ports, multiport lists and a RETURN for a trusted source.
 * Three runs; the median is reported. Writes bench-results/import.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Table from 'cli-table3';
import { lint } from '../deploy/analysis/index.js';
import { importRules, importedList } from '../deploy/import/index.js';
import { random } from './topology.js';
import { REPO, median } from './reference.js';

export function generatedDump(seed: number, lines: number, chains: number): string {
  const rnd = random(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)]!;
  const ports = [22, 25, 53, 80, 110, 143, 443, 993, 3306, 5432, 8080];
  const out = ['*filter', ':INPUT ACCEPT [0:0]', ':FORWARD DROP [0:0]', ':OUTPUT ACCEPT [0:0]'];
  const users = Array.from({ length: chains - 1 }, (_, k) => `net${k}`);
  for (const u of users) out.push(`:${u} - [0:0]`);
  out.push('-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT');
  users.forEach((u, k) => out.push(`-A FORWARD -d 10.${k >> 2}.${k % 4}.0/24 -j ${u}`));
  const perChain = Math.floor((lines - out.length) / users.length);
  users.forEach((u, k) => {
    const net = `10.${k >> 2}.${k % 4}`;
    out.push(`-A ${u} -s 192.168.${k}.0/24 -j RETURN`);
    for (let i = 1; i < perChain - 1; i++) {
      const host = `${net}.${1 + Math.floor(rnd() * 254)}`;
      const src =
        rnd() < 0.3 ? `-s ${pick([172, 192, 100])}.${Math.floor(rnd() * 32)}.${Math.floor(rnd() * 256)}.0/24 ` : '';
      const proto = pick(['tcp', 'udp']);
      const match =
        rnd() < 0.2
          ? `-m multiport --dports ${pick(ports)},${pick(ports)},${pick(ports)}`
          : `-m ${proto} --dport ${pick(ports)}`;
      out.push(`-A ${u} ${src}-d ${host}/32 -p ${proto} ${match} -j ${rnd() < 0.7 ? 'ACCEPT' : 'DROP'}`);
    }
    out.push(`-A ${u} -j DROP`);
  });
  out.push('COMMIT');
  return `${out.join('\n')}\n`;
}

function main() {
  const text = generatedDump(65, 5000, 65);
  const lineCount = text.split('\n').length - 1;
  const runs: { importS: number; lintS: number; entries: number; findings: number | string }[] = [];
  for (let r = 0; r < 3; r++) {
    const t0 = performance.now();
    const imported = importRules('iptables', text, 'generated.rules');
    const list = importedList(imported);
    const t1 = performance.now();
    // The analyses bound their work (MAX_ANALYSIS_TESTS): a refusal is a result here, said in the table.
    let findings: number | string;
    try {
      findings = lint(list).findings.length;
    } catch (e) {
      findings = `refused: ${(e as Error).message.slice(0, 80)}`;
    }
    const t2 = performance.now();
    runs.push({ importS: (t1 - t0) / 1000, lintS: (t2 - t1) / 1000, entries: list.lines.length, findings });
  }
  const imp = median(runs.map((r) => r.importS));
  const lin = median(runs.map((r) => r.lintS));
  const table = new Table({
    head: ['dump', 'lines', 'chains', 'entries', 'findings', 'import s', 'lint s', 'target'],
    style: { head: [], border: [] },
  });
  const met = imp + lin < 5 && typeof runs[0]!.findings === 'number' ? 'met' : 'missed';
  table.push([
    'generated (seed 65)',
    lineCount,
    65,
    runs[0]!.entries,
    runs[0]!.findings,
    imp.toFixed(2),
    lin.toFixed(2),
    `< 5 s: ${met}`,
  ]);
  const md = [
    '# Import and lint of a 5,000-line iptables-save dump',
    '',
    'npm run bench:import (src/bench/import.ts): median of 3 runs, one process.',
    '',
    '| dump | lines | chains | entries | findings | import s | lint s | target (< 5 s) |',
    '|---|---|---|---|---|---|---|---|',
    `| generated (seed 65) | ${lineCount} | 65 | ${runs[0]!.entries} | ${runs[0]!.findings} | ` +
      `${imp.toFixed(2)} | ${lin.toFixed(2)} | ${met} |`,
    '',
  ].join('\n');
  console.log(table.toString());
  const dir = path.join(REPO, 'bench-results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'import.md'), md);
}

main();
