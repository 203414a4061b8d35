/**
 * npm run bench:deploy: the whole `nfv deploy nftables NID` process, start included, for a stored firewall of 1,000
 * seeded random rules (octet patterns and CIDR prefixes of any length, ports and ranges, mostly TCP and UDP, one
 * in ten OTHER, both actions, some directional), as text, with --sets and with --format json; beside `node -e 0`
 * measured in the same run. Target (issue 23 item 7): under 0.3 s. Medians of 21 processes each; prints a table and
 * writes bench-results/deploy.md.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Table from 'cli-table3';
import type { Elements, Node } from '../model/types.js';
import { fwdNodesCreate } from '../ops/firewalls.js';
import { invoke } from '../ops/operation.js';
import { Workspace } from '../store/workspace.js';
import { NFV_BIN, REPO, median, withThisNode } from './reference.js';
import { random } from './topology.js';

const RUNS = 21;
const RULES = 1000;
const TARGET_SECONDS = 0.3;

/** A firewall node of `count` seeded random rules. */
export function randomFirewall(seed: number, count: number): Node {
  const rnd = random(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)]!;
  const octet = () => pick([10, 20, 172, 192, 0, 1, 16, 168, 254]);
  const address = () => {
    if (rnd() < 0.1) return '*';
    if (rnd() < 0.4) {
      const length = pick([8, 12, 16, 20, 24, 25, 28, 32]);
      const value = [octet(), octet(), octet(), octet()].reduce((v, o) => v * 256 + o, 0);
      const network = value - (value % 2 ** (32 - length));
      return `${[3, 2, 1, 0].map((k) => Math.floor(network / 256 ** k) % 256).join('.')}/${length}`;
    }
    return [0, 1, 2, 3].map(() => (rnd() < 0.3 ? -1 : octet())).join('.');
  };
  const ports = () => pick(['*', '22', '80', '443', '1000-2000', '0-1023', '53']);
  const element = (): Elements => {
    // As firewalls are written: mostly TCP and UDP services, some rules for every protocol, few for OTHER alone
    // (each OTHER rule becomes the TCP and UDP parts of every later rule before it: no format but iptables has it).
    const protocol = pick(['TCP', 'TCP', 'TCP', 'TCP', 'UDP', 'UDP', 'UDP', 'ANY', 'ANY', 'OTHER'] as const);
    return {
      action: rnd() < 0.5 ? 'ALLOW' : 'DENY',
      source: address(),
      destination: address(),
      protocol,
      ...(protocol === 'TCP' || protocol === 'UDP'
        ? { srcPort: pick(['*', '*', '1024-65535']), dstPort: ports() }
        : {}),
      ...(rnd() < 0.05 ? { directional: true } : {}),
    };
  };
  return {
    name: '10.255.0.1',
    functionalType: 'FIREWALL',
    configuration: {
      name: 'bench',
      firewall: { defaultAction: 'DENY', elements: Array.from({ length: count }, element) },
    },
  };
}

async function main() {
  const dir = mkdtempSync(path.join(tmpdir(), 'nfv-bench-deploy-'));
  try {
    const ws = new Workspace(dir);
    const created = await invoke(fwdNodesCreate, ws, { body: JSON.stringify(randomFirewall(23, RULES)) });
    if (!created.ok) throw new Error(created.error);
    const { id } = created.reply.value as { id: number };
    const env = withThisNode({ ...process.env, NFV_WORKSPACE: dir, NO_COLOR: '1' });
    const time = ([command, ...args]: string[]) => {
      const times: number[] = [];
      let out = '';
      for (let k = 0; k < RUNS; k++) {
        const t0 = performance.now();
        const r = spawnSync(command!, args, { env, encoding: 'utf8', maxBuffer: 64 << 20 });
        times.push((performance.now() - t0) / 1000);
        if (r.status !== 0) throw new Error(`${[command, ...args].join(' ')}: exit ${r.status}: ${r.stderr}`);
        out = r.stdout;
      }
      return { seconds: median(times), out };
    };
    const node = time([process.execPath, '-e', '0']).seconds;
    const variants: [string, string[]][] = [
      ['text', []],
      ['--sets', ['--sets']],
      ['--format json', ['--format', 'json']],
    ];
    const rows = variants.map(([label, extra]) => {
      const { seconds, out } = time([NFV_BIN, 'deploy', 'nftables', String(id), ...extra]);
      const rules =
        label === '--format json'
          ? (JSON.parse(out) as { nftables: { add?: object }[] }).nftables.filter((x) => x.add && 'rule' in x.add)
              .length
          : out.split('\n').filter((l) => l.startsWith('\t\t') && !l.includes(' policy ')).length;
      return { label, seconds, rules };
    });
    const table = new Table({
      head: ['nfv deploy nftables', 'nfv rules', 'nft rules', 'median s', 'target'],
      style: { head: [], border: [] },
    });
    const verdict = (s: number) => (s < TARGET_SECONDS ? 'met' : 'missed');
    for (const r of rows)
      table.push([r.label, RULES, r.rules, r.seconds.toFixed(3), `< ${TARGET_SECONDS} s: ${verdict(r.seconds)}`]);
    table.push(['node -e 0', '', '', node.toFixed(3), '']);
    console.log(table.toString());
    const md = [
      '# `nfv deploy nftables` of a 1,000-rule firewall, whole process',
      '',
      `npm run bench:deploy (src/bench/deploy.ts): medians of ${RUNS} processes, \`bin/nfv\` (the bundle), one stored`,
      'firewall of 1,000 seeded random rules; `node -e 0` measured in the same run.',
      '',
      `| nfv deploy nftables | nfv rules | nft rules | median s | target (< ${TARGET_SECONDS} s) |`,
      '|---|---|---|---|---|',
      ...rows.map((r) => `| ${r.label} | ${RULES} | ${r.rules} | ${r.seconds.toFixed(3)} | ${verdict(r.seconds)} |`),
      `| node -e 0 | | | ${node.toFixed(3)} | |`,
      '',
    ].join('\n');
    const results = path.join(REPO, 'bench-results');
    mkdirSync(results, { recursive: true });
    writeFileSync(path.join(results, 'deploy.md'), md);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
