/**
 * npm run bench:import: the import of every iptables-save dump of test/fixtures (the real ones of
 * test/fixtures/iptables/real among them, the chair's router's May and September snapshots the largest) and of a
 * generated set of 20,000 rules with 2,000 RETURNs, negated matches and 100 user chains; then `firewall diff` of
 * the May and September snapshots. Each run is a child process of its own, for its peak memory (VmHWM, child.ts);
 * three runs each, the median reported, with CPU seconds beside wall seconds (the machine is shared). Targets
 * (issue #47): every dump imports, the chair's router and the generated set within 2 s and 500 MB, the diff within
 * 5 s. Writes bench-results/import.md.
 *
 * An import is what the analyses read: the file read, its chains unfolded, the rule list made (`importedList`).
 * NAT is left out (`--ignore-nat`): its import is another item of the issue.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import { diff } from '../deploy/analysis/index.js';
import { importRules, importedList, parseIpsets, type ImportOptions } from '../deploy/import/index.js';
import { peakOf } from './child.js';
import { REPO, median } from './reference.js';
import { random } from './topology.js';

const FIXTURES = path.join(REPO, 'test', 'fixtures', 'iptables');
const GENERATED = 'generated (seed 47)';
const MAY = path.join(FIXTURES, 'real', 'tum-2015-05.rules');
const SEPTEMBER = path.join(FIXTURES, 'real', 'tum-2015-09.rules');
const RUNS = 3;

/**
 * A generated iptables-save filter of `rules` rules: FORWARD dispatches by destination /16 (some with a negated
 * source) into `chains` user chains; each chain opens with RETURNs (hosts, a negated protocol, a negated port),
 * has ACCEPT and DROP lines on hosts and ports (some negated, some multiport), a RETURN in every tenth line and a
 * jump into a later chain in some, and ends with a DROP. Seeded: the same text for the same arguments.
 */
export function generatedDump(seed: number, rules: number, chains: number, returns: number): string {
  const rnd = random(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)]!;
  const int = (n: number) => Math.floor(rnd() * n);
  const ports = [22, 25, 53, 80, 110, 143, 443, 993, 3306, 5432, 8080];
  const users = Array.from({ length: chains }, (_, k) => `net${k}`);
  const head = ['*filter', ':INPUT ACCEPT [0:0]', ':FORWARD DROP [0:0]', ':OUTPUT ACCEPT [0:0]'];
  const body: string[] = ['-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT'];
  for (const u of users) head.push(`:${u} - [0:0]`);
  users.forEach((u, k) => {
    const negated = k % 5 === 0 ? `! -s 10.${k}.0.0/16 ` : '';
    body.push(`-A FORWARD ${negated}-d 10.${k}.0.0/16 -j ${u}`);
  });
  const perChain = Math.floor((rules - body.length) / chains);
  const returnsPerChain = Math.floor(returns / chains);
  users.forEach((u, k) => {
    let left = returnsPerChain;
    const ret = (line: string) => {
      body.push(line);
      left--;
    };
    ret(`-A ${u} -s 192.168.${k}.${1 + int(254)}/32 -j RETURN`);
    ret(`-A ${u} ! -p tcp -s 172.16.${k}.0/24 -j RETURN`);
    ret(`-A ${u} -p tcp ! --dport ${pick(ports)} -s 100.64.${k}.0/24 -j RETURN`);
    for (let i = 3; i < perChain - 1; i++) {
      if (left > 0 && i % Math.max(2, Math.floor(perChain / returnsPerChain)) === 0) {
        ret(`-A ${u} -s ${pick([172, 192, 100])}.${int(32)}.${int(256)}.${int(256)}/32 -j RETURN`);
        continue;
      }
      if (k + 1 < chains && rnd() < 0.01) {
        body.push(`-A ${u} -s 198.18.${int(256)}.0/24 -j ${users[k + 1 + int(Math.min(5, chains - k - 1))]}`);
        continue;
      }
      const host = `10.${k}.${int(256)}.${1 + int(254)}`;
      const r = rnd();
      const src =
        r < 0.25
          ? `-s ${pick([172, 192, 100])}.${int(32)}.${int(256)}.0/24 `
          : r < 0.35
            ? `! -s ${pick([172, 192, 100])}.${int(32)}.0.0/16 `
            : '';
      const proto = pick(['tcp', 'udp']);
      const match =
        rnd() < 0.2
          ? `-m multiport --dports ${pick(ports)},${pick(ports)},${pick(ports)}`
          : rnd() < 0.1
            ? `-m ${proto} ! --dport ${pick(ports)}`
            : `-m ${proto} --dport ${pick(ports)}`;
      body.push(`-A ${u} ${src}-d ${host}/32 -p ${proto} ${match} -j ${rnd() < 0.7 ? 'ACCEPT' : 'DROP'}`);
    }
    body.push(`-A ${u} -j DROP`);
  });
  return `${[...head, ...body, 'COMMIT'].join('\n')}\n`;
}

/** What one child answers. */
interface Result {
  ok: boolean;
  message?: string;
  lines: number;
  reached: number;
  entries: number;
  classes?: number;
  wallS: number;
  cpuS: number;
  peakMB?: number;
}

/** The reading options of a dump: its ipsets when an `ipset save` file of the same name lies beside it. */
function optionsOf(file: string): ImportOptions {
  const sets = file.replace(/\.rules$/, '.ipset');
  return {
    ignoreNat: true,
    ...(existsSync(sets) ? { ipsets: parseIpsets(readFileSync(sets, 'utf8'), path.basename(sets)) } : {}),
  };
}

const textOf = (file: string) =>
  file === GENERATED ? generatedDump(47, 20_000, 100, 2_000) : readFileSync(file, 'utf8');
const countLines = (text: string) => text.split('\n').filter((l) => l.startsWith('-A ')).length;

/** In the child: one import (or the diff, `--diff`), timed, with the process's peak memory. */
function child(args: string[]): Result {
  const diffing = args[0] === '--diff';
  const files = diffing ? args.slice(1) : args;
  const texts = files.map(textOf);
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  const lines = texts.reduce((n, t) => n + countLines(t), 0);
  let out: Result;
  try {
    const imported = files.map((f, k) => importRules('iptables', texts[k]!, path.basename(f), optionsOf(f)));
    const lists = imported.map((i) => importedList(i));
    const classes = diffing ? diff(lists[0]!, lists[1]!).classes.length : undefined;
    const reached = imported.reduce((n, i) => n + i.report.lines.length, 0);
    const entries = lists.reduce((n, l) => n + l.lines.length, 0);
    out = { ok: true, lines, reached, entries, ...(classes === undefined ? {} : { classes }), wallS: 0, cpuS: 0 };
  } catch (e) {
    const message = (e as Error).message.split('\n')[0]!.slice(0, 160);
    out = { ok: false, message, lines, reached: 0, entries: 0, wallS: 0, cpuS: 0 };
  }
  const used = process.cpuUsage(cpu);
  out.wallS = (performance.now() - t0) / 1000;
  out.cpuS = (used.user + used.system) / 1e6;
  const peak = peakOf(process.pid);
  return { ...out, ...(peak === undefined ? {} : { peakMB: peak }) };
}

function runChild(args: string[]): Result {
  const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  return JSON.parse(out) as Result;
}

interface Row {
  name: string;
  runs: Result[];
  target?: { seconds: number; mb?: number };
}

function measure(name: string, args: string[], target?: Row['target']): Row {
  process.stderr.write(`${name} `);
  const runs = Array.from({ length: RUNS }, () => runChild(args));
  return { name, runs, ...(target ? { target } : {}) };
}

function cells(row: Row): string[] {
  const [first] = row.runs;
  const wall = median(row.runs.map((r) => r.wallS));
  const cpu = median(row.runs.map((r) => r.cpuS));
  const peak = median(row.runs.map((r) => r.peakMB ?? NaN));
  const ok = row.runs.every((r) => r.ok);
  let met = '';
  if (row.target)
    met =
      ok && wall < row.target.seconds && (row.target.mb === undefined || peak < row.target.mb)
        ? `met (< ${row.target.seconds} s${row.target.mb ? `, < ${row.target.mb} MB` : ''})`
        : 'missed';
  return [
    row.name,
    String(first!.lines),
    ok ? String(first!.reached) : `refused: ${first!.message}`,
    ok ? String(first!.classes ?? first!.entries) : '',
    wall.toFixed(2),
    cpu.toFixed(2),
    Number.isNaN(peak) ? '?' : String(peak),
    met,
  ];
}

function main() {
  const dumps = [FIXTURES, path.join(FIXTURES, 'real')].flatMap((dir) =>
    readdirSync(dir)
      .filter((f) => f.endsWith('.rules'))
      .sort()
      .map((f) => path.join(dir, f)),
  );
  const load = loadavg().map((l) => l.toFixed(2));
  const rows: Row[] = dumps.map((file) => {
    const name = path.relative(FIXTURES, file);
    const large = file === MAY || file === SEPTEMBER;
    return measure(name, [file], large ? { seconds: 2, mb: 500 } : undefined);
  });
  rows.push(measure(GENERATED, [GENERATED], { seconds: 2, mb: 500 }));
  rows.push(measure('diff real/tum-2015-05 real/tum-2015-09', ['--diff', MAY, SEPTEMBER], { seconds: 5 }));
  process.stderr.write('\n');
  const head = ['dump', 'lines', 'rules reached', 'entries (diff: classes)', 'wall s', 'CPU s', 'peak MB', 'target'];
  const table = new Table({ head, style: { head: [], border: [] } });
  for (const row of rows) table.push(cells(row));
  console.log(table.toString());
  const loadAfter = loadavg().map((l) => l.toFixed(2));
  const md = [
    '# Import of every iptables-save dump of test/fixtures',
    '',
    `npm run bench:import (src/bench/import.ts): median of ${RUNS} runs, each a child process of its own (peak MB:`,
    'its VmHWM); lines: `-A` lines of the file; rules reached: lines of the chains a forwarded packet passes, and the',
    'nat and mangle lines judged; entries: of the rule list the analyses read. NAT left out (--ignore-nat).',
    `Load average before: ${load.join(', ')}; after: ${loadAfter.join(', ')} (2 cores, shared).`,
    '',
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${cells(row).join(' | ')} |`),
    '',
  ].join('\n');
  const dir = path.join(REPO, 'bench-results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'import.md'), md);
}

// Run, not imported (the tests import generatedDump).
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === '--child') process.stdout.write(JSON.stringify(child(process.argv.slice(3))));
  else main();
}
