/**
 * Import of live firewalls (firewall-io.md B.10): the realistic dumps of test/fixtures/iptables each import with
 * their counts; real iptables is the oracle for them (each loaded with iptables-restore in a namespace of its own,
 * interfaces renamed to the ones packets use there, real packets sent through test/deploy/forward.py): an exact
 * import gives the kernel's verdict on every sampled first packet, an approximated one is on the safe side (the
 * must list accepts only what the kernel accepts, the may list drops only what it drops). Round trips: nfv's own
 * iptables and nftables output imported back is equivalent to the node (an empty diff).
 */
import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { random } from '../../../src/bench/topology.js';
import { diff, listOfNode, type RuleList } from '../../../src/deploy/analysis/index.js';
import {
  importRules,
  importedList,
  importedNode,
  interfaceMap,
  parseIpsets,
  type ImportOptions,
} from '../../../src/deploy/import/index.js';
import { iptables } from '../../../src/deploy/iptables.js';
import { nftables } from '../../../src/deploy/nftables.js';
import type { Elements, Node } from '../../../src/model/types.js';
import { PYTHON, ROOT, runProcess, scratch } from '../../helpers.js';
import { allowsPacket } from '../first-match.js';
import { libnft } from '../nft-harness.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './acceptance.part.js';
import './real.part.js';
import './unfold.part.js';
import './nat-interfaces.part.js';
import './conntrack-orig.part.js';

const DIR = path.join(ROOT, 'test', 'fixtures', 'iptables');
const dump = (name: string) => readFile(path.join(DIR, name), 'utf8');
const NAMESPACES = ['-rnp', '--fork', '--kill-child'];
const probe = spawnSync('unshare', [...NAMESPACES, 'sh', '-c', 'iptables -S FORWARD && nft list ruleset'], {
  encoding: 'utf8',
});
const kernelWhy =
  probe.status !== 0
    ? `iptables and nft in a namespace are not available here (${(probe.stderr || String(probe.error)).trim()})`
    : existsSync(PYTHON)
      ? ''
      : `${PYTHON} is not installed here (the packet sender)`;
const ipsetWhy = spawnSync('sh', ['-c', 'command -v ipset'], { encoding: 'utf8' }).status === 0 ? '' : 'no ipset';
if (process.env.CI === 'true')
  for (const why of [kernelWhy, ipsetWhy]) if (why) t.fail(`${why}; .ci/run must provide it`);

const ROUTER_IFACES = ['wan=0.0.0.0/1,128.0.0.0/2,193.0.0.0/8', 'lan1=192.168.10.0/24', 'lan2=192.168.20.0/24'];

async function options(name: string): Promise<ImportOptions> {
  if (name === 'hosting') return { ipsets: parseIpsets(await dump('hosting.ipset'), 'hosting.ipset') };
  if (name === 'docker') return { ignoreNat: true, iface: interfaceMap(['docker0=172.17.0.0/16']) };
  if (name === 'router') return { iface: interfaceMap(ROUTER_IFACES) };
  return {};
}

t.test('the realistic dumps import with their counts', async (t) => {
  const expected: Record<
    string,
    {
      counts: Record<string, number>;
      approximated?: number[];
      rules: { may: number; must: number };
      /** With except boxes (RETURNs, negated lines as a hull less its gaps), where they are fewer. */
      folded?: number;
    }
  > = {
    'dmz-router': {
      counts: { exact: 18, 'new-connection': 2, 'no-verdict': 2, approximated: 0 },
      rules: { may: 14, must: 14 },
      folded: 12,
    },
    hosting: {
      counts: { exact: 12, 'new-connection': 3, 'no-verdict': 1, approximated: 2 },
      approximated: [16, 12],
      rules: { may: 29, must: 29 },
    },
    docker: {
      counts: { exact: 12, 'new-connection': 1, 'no-verdict': 1, approximated: 0 },
      rules: { may: 34, must: 34 },
      folded: 4,
    },
    router: {
      counts: { exact: 9, 'new-connection': 2, 'no-verdict': 1, approximated: 0 },
      rules: { may: 20, must: 20 },
    },
  };
  for (const [name, want] of Object.entries(expected)) {
    const imported = importRules('iptables', await dump(`${name}.rules`), `${name}.rules`, await options(name));
    const { refused: _r, ...counts } = imported.report.counts;
    t.same(counts, want.counts, `${name}: counts`);
    if (want.approximated)
      t.same(
        imported.report.lines.filter((l) => l.class === 'approximated').map((l) => l.line),
        want.approximated,
        `${name}: the approximated lines`,
      );
    // The node's rules (prefixes and octet patterns) mean what the unfolded list means, in both lists: plain rules
    // (VEREFOO's), and with except boxes (the default).
    for (const which of ['may', 'must'] as const) {
      const plain = importedNode(imported, '10.255.0.1', which, true).node;
      t.equal(plain.configuration!.firewall!.elements!.length, want.rules[which], `${name}: ${which} list, rules`);
      t.ok(diff(listOfNode(plain, name), importedList(imported, which)).equivalent, `${name}: ${which} node = list`);
      const { node } = importedNode(imported, '10.255.0.1', which);
      const folded = want.folded ?? want.rules[which];
      t.equal(node.configuration!.firewall!.elements!.length, folded, `${name}: ${which} list, folded rules`);
      t.ok(diff(listOfNode(node, name), importedList(imported, which)).equivalent, `${name}: ${which} folded = list`);
    }
  }
  // The same dumps without their maps: unmapped interfaces approximated, a DNAT refused naming its line.
  const docker = await dump('docker.rules');
  t.throws(() => importRules('iptables', docker, 'docker.rules'), /^docker\.rules:12: -j DNAT in table nat PREROUTING/);
  const router = importRules('iptables', await dump('router.rules'), 'router.rules');
  t.equal(router.report.counts.approximated, 8, 'router without --iface: 8 lines approximated');
  // Both lists in one node: each rule of one list only marked, naming its line; such a node is not deployed.
  const both = importedNode(router, '10.0.0.1').node;
  const marked = both.configuration!.firewall!.elements!.filter((e) => e.approximation);
  t.same(
    [...new Set(marked.map((e) => e.origin))].sort(),
    router.report.lines
      .filter((l) => l.class === 'approximated')
      .map((l) => l.where)
      .sort(),
    'the marked rules come from the 8 approximated lines',
  );
  for (const which of ['may', 'must'] as const)
    t.ok(diff(listOfNode(both, 'both', which), importedList(router, which)).equivalent, `the node's ${which} list`);
  t.throws(() => iptables(both, 1), /approximation="(may|must)" \(router\.rules:\d+\): an approximated import/);
  t.equal(importedNode(router, '10.0.0.1', 'may').node.configuration!.firewall!.defaultAction, 'DENY');
});

t.test('OUTPUT is read behind raw and mangle OUTPUT, never behind PREROUTING', async (t) => {
  const text = [
    '*raw',
    ':PREROUTING ACCEPT [0:0]',
    ':OUTPUT ACCEPT [0:0]',
    '-A PREROUTING -d 10.0.1.0/24 -j DROP',
    '-A OUTPUT -d 10.0.2.0/24 -j DROP',
    'COMMIT',
    '*mangle',
    ':OUTPUT ACCEPT [0:0]',
    ':POSTROUTING ACCEPT [0:0]',
    '-A OUTPUT -d 10.0.3.0/24 -j DROP',
    '-A POSTROUTING -d 10.0.4.0/24 -j DROP',
    'COMMIT',
    '*filter',
    ':INPUT ACCEPT [0:0]',
    ':OUTPUT ACCEPT [0:0]',
    'COMMIT',
    '',
  ].join('\n');
  const drops = (octets: string[]) =>
    importRules(
      'iptables',
      ['*filter', ':FORWARD ACCEPT [0:0]']
        .concat(
          octets.map((o) => `-A FORWARD -d 10.0.${o}.0/24 -j DROP`),
          ['COMMIT', ''],
        )
        .join('\n'),
      'expected',
    );
  const output = importRules('iptables', text, 'host.rules', { chain: 'OUTPUT' });
  t.ok(diff(importedList(output), importedList(drops(['2', '3', '4']))).equivalent, 'raw, mangle OUTPUT, POSTROUTING');
  const input = importRules('iptables', text, 'host.rules', { chain: 'INPUT' });
  t.ok(diff(importedList(input), importedList(drops(['1']))).equivalent, 'INPUT: raw PREROUTING only');
});

t.test('refusals name file:line and why', async (t) => {
  const wrap = (rule: string, chains = '') => `*filter\n:FORWARD ACCEPT [0:0]\n${chains}${rule}\nCOMMIT\n`;
  const cases: [string, RegExp][] = [
    ['-A FORWARD -s 2001:db8::1 -j DROP', /f:3: 2001:db8::1: an IPv6 address/],
    ['-A FORWARD -s example.com -j DROP', /f:3: example\.com: a host name \(nfv does not resolve names\)/],
    ['-A FORWARD -j nowhere', /f:3: -j nowhere: no user chain nowhere in table filter/],
    ['-A FORWARD -j DNAT --to-destination 10.0.0.1', /f:3: -j DNAT in table filter/],
    ['-A FORWARD -s 10.0.0.0/255.0.15.0 -j DROP', /f:3: .*not contiguous within an octet/],
    ['-A FORWARD --frobnicate -j DROP', /f:3: --frobnicate: unknown option/],
    ['-A FORWARD -m comment --comment "open -j DROP', /f:3: unbalanced quotes/],
    ['-A FORWARD -j a\n-A a -j b\n-A b -j a', /chain a jumps back into itself \(a -> b -> a\)/],
  ];
  for (const [rule, message] of cases) {
    const chains = rule.includes('-A a') ? ':a - [0:0]\n:b - [0:0]\n' : '';
    t.throws(() => importRules('iptables', wrap(rule, chains), 'f'), message, rule.split('\n')[0]);
  }
  // CRLF, trailing blanks, counters and the old `-s ! A` form are read as the new one.
  const old = importRules('iptables', wrap('[5:300] -A FORWARD -s ! 10.0.0.0/8 -j DROP  \r'), 'f');
  const modern = importRules('iptables', wrap('-A FORWARD ! -s 10.0.0.0/8 -j DROP'), 'f');
  t.ok(diff(importedList(old), importedList(modern)).equivalent, '-s ! A reads as ! -s A');
});

// ---------------------------------------------------------------------------------------------------------------
// Real iptables as the oracle

// Protocol number (99: one conntrack tracks generically, as GRE's parser would call forward.py's bytes invalid),
// source, destination, ports.
type Packet = [number, string, string, number, number];

/** First match over a list's boxes (../first-match.ts, written from the meaning of a rule list). */
function verdictOf(list: RuleList, [proto, src, dst, sport, dport]: Packet): boolean {
  const point = [
    ...src.split('.').map(Number),
    ...dst.split('.').map(Number),
    sport,
    dport,
    proto === 6 ? 0 : proto === 17 ? 1 : 2,
  ];
  return allowsPacket(list, point);
}

interface Scenario {
  name: string;
  /** Interface renames for the kernel: packets enter on in1 and leave on out0. */
  rename: [string, string][];
  sources: string[];
  destinations: string[];
}

const PORTS = [0, 22, 25, 53, 80, 123, 137, 161, 443, 445, 631, 993, 1000, 3306, 5432, 8080, 8085, 65535];
const SCENARIOS: Scenario[] = [
  {
    name: 'dmz-router',
    rename: [],
    sources: ['10.1.9.7', '10.1.66.3', '10.1.5.5', '10.2.0.10', '10.2.0.99', '192.168.1.1', '8.8.8.8', '10.9.1.1'],
    destinations: ['10.2.0.10', '10.2.0.20', '10.2.0.53', '10.2.0.1', '192.168.3.4', '8.8.4.4', '10.1.2.3'],
  },
  {
    name: 'hosting',
    rename: [],
    sources: ['198.51.100.7', '198.51.100.9', '192.0.2.5', '192.0.2.200', '100.64.3.3', '203.0.113.50', '9.9.9.9'],
    destinations: ['203.0.113.10', '203.0.113.11', '203.0.113.12', '203.0.113.20', '203.0.113.31', '203.0.113.40'],
  },
  {
    name: 'docker',
    rename: [['docker0', 'in1']],
    sources: ['172.17.0.2', '172.17.0.3'],
    destinations: ['8.8.8.8', '10.66.1.1', '93.184.216.34'],
  },
  {
    name: 'docker',
    rename: [['docker0', 'out0']],
    sources: ['8.8.8.8', '10.66.1.1', '93.184.216.34'],
    destinations: ['172.17.0.2', '172.17.0.3'],
  },
  {
    name: 'router',
    rename: [
      ['lan1', 'in1'],
      ['wan', 'out0'],
    ],
    sources: ['192.168.10.5', '192.168.10.80'],
    destinations: ['8.8.8.8', '93.184.216.34', '193.0.14.129'],
  },
  {
    name: 'router',
    rename: [
      ['wan', 'in1'],
      ['lan1', 'out0'],
    ],
    sources: ['8.8.8.8', '93.184.216.34', '193.0.14.129'],
    destinations: ['192.168.10.80', '192.168.10.5'],
  },
  {
    name: 'router',
    rename: [
      ['lan2', 'in1'],
      ['wan', 'out0'],
    ],
    sources: ['192.168.20.5', '192.168.20.9'],
    destinations: ['8.8.8.8', '193.0.14.129'],
  },
];

t.test(
  'real iptables gives the imported verdict on every sampled first packet',
  { skip: kernelWhy || false },
  async (t) => {
    const dir = await scratch(t);
    const rnd = random(2311);
    const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)]!;
    let sent = 0;
    let forwarded = 0;
    for (const [k, s] of SCENARIOS.entries()) {
      if (s.name === 'hosting' && ipsetWhy) {
        t.comment('hosting: skipped, ipset is not installed');
        continue;
      }
      const text = await dump(`${s.name}.rules`);
      const imported = importRules('iptables', text, s.name, await options(s.name));
      const [may, must] = [importedList(imported, 'may'), importedList(imported, 'must')];
      // What the real iptables-restore reads: no CR, no trailing blanks, the new negation form, renamed interfaces.
      let loaded = text
        .replace(/[ \t]*\r?$/gm, '')
        .replace(/-s ! (\S+)/g, '! -s $1')
        .replace(/-j CT --helper ftp/, '-j CT --notrack')
        // Masquerading out of an interface without an address drops in the namespace; it follows filtering anyway.
        .replace(/^-A POSTROUTING .*-j MASQUERADE$/gm, '');
      for (const [from, to] of s.rename) loaded = loaded.replace(new RegExp(`([io] )${from}\\b`, 'g'), `$1${to}`);
      const file = path.join(dir, `${k}.rules`);
      await writeFile(file, loaded);
      const ipset = s.name === 'hosting' ? `ipset restore < ${path.join(DIR, 'hosting.ipset')} && ` : '';
      const packets: Packet[] = [];
      for (let i = 0; i < 300; i++)
        packets.push([pick([6, 6, 17, 17, 99]), pick(s.sources), pick(s.destinations), pick(PORTS), pick(PORTS)]);
      // forward.py leaves TCP checksums zero: conntrack must not call its SYNs INVALID for that.
      const checksums = 'echo 0 > /proc/sys/net/netfilter/nf_conntrack_checksum';
      const load = ['sh', '-c', `${ipset}iptables-restore ${file} && ${checksums}`];
      const jobs = [{ load, unload: null, packets }];
      const script = path.join(ROOT, 'test', 'deploy', 'forward.py');
      const r = await runProcess(t, 'unshare', [...NAMESPACES, PYTHON, script], JSON.stringify(jobs));
      if (r.code !== 0) {
        t.fail(`${s.name}: forward.py exited ${r.code}: ${r.stderr.trim()}`);
        continue;
      }
      const [kernel] = JSON.parse(r.stdout) as boolean[][];
      const wrong = packets.flatMap((p, i) => {
        const real = kernel![i]!;
        const [mayAllow, mustAllow] = [verdictOf(may, p), verdictOf(must, p)];
        return (mustAllow && !real) || (!mayAllow && real)
          ? [`${JSON.stringify(p)}: kernel ${real}, may ${mayAllow}, must ${mustAllow}`]
          : [];
      });
      const exact = packets.filter((p) => verdictOf(may, p) === verdictOf(must, p)).length;
      sent += packets.length;
      t.same(
        wrong.slice(0, 5),
        [],
        `${s.name} (${s.rename.map((x) => x.join('->')).join(', ') || 'as is'}): ${packets.length} packets, ${exact} decided exactly, the others on the safe side`,
      );
      forwarded += kernel!.filter(Boolean).length;
    }
    t.ok(forwarded > 0 && forwarded < sent, `the kernel forwards ${forwarded} of ${sent} packets, drops the others`);
  },
);

// ---------------------------------------------------------------------------------------------------------------
// Round trips

/**
 * Seeded firewalls whose ports go with TCP or UDP only (ANY and OTHER without ports: item 3 decides the rest), some
 * rules directional (the analyses read them as the engine verifies them and every translator deploys them: the
 * rule, then its reverse).
 */
function firewalls(seed: number, count: number): Node[] {
  const rnd = random(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)]!;
  const octet = (pool: number[]) => (rnd() < 0.3 ? -1 : pick(pool));
  const pattern = () => [octet([10, 20, 172]), octet([0, 1, 16]), octet([0, 1, 255]), octet([1, 2, 254])].join('.');
  const ports = () => pick(['*', '22', '80', '1000-2000', '0-1023', '443']);
  const element = (): Elements => {
    const protocol = pick(['TCP', 'UDP', 'ANY', 'OTHER'] as const);
    const ported = protocol === 'TCP' || protocol === 'UDP';
    return {
      action: rnd() < 0.5 ? 'ALLOW' : 'DENY',
      source: pattern(),
      destination: pattern(),
      protocol,
      ...(ported ? { srcPort: ports(), dstPort: ports() } : {}),
      ...(rnd() < 0.2 ? { directional: true } : {}),
    };
  };
  return Array.from({ length: count }, (_, k) => ({
    id: k,
    name: '10.255.0.1',
    functionalType: 'FIREWALL',
    configuration: {
      name: 'fw',
      firewall: {
        defaultAction: rnd() < 0.5 ? 'ALLOW' : 'DENY',
        elements: Array.from({ length: Math.floor(rnd() * 25) }, element),
      },
    },
  }));
}

t.test('nfv deploy iptables, then import: 200 firewalls, every diff empty', async (t) => {
  const differ = firewalls(77, 200).flatMap((node, k) => {
    const back = importedList(importRules('iptables', iptables(node, k), `fw${k}.rules`));
    const d = diff(listOfNode(node, `fw ${k}`), back);
    return d.equivalent ? [] : [`firewall ${k}: ${d.classes.length} classes differ`];
  });
  t.same(differ.slice(0, 5), [], 'all 200 equivalent');
});

t.test(
  'nfv deploy nftables, load, nft -j list ruleset, import: every diff empty',
  { skip: kernelWhy || false },
  async (t) => {
    const dir = await scratch(t);
    const nodes = firewalls(78, 100);
    const files: string[] = [];
    for (const [k, node] of nodes.entries()) {
      files.push(path.join(dir, `${k}.nft`));
      await writeFile(files[k]!, nftables(node, k));
    }
    // Per file: `nft -f`, `nft -j list ruleset`, then `nft flush ruleset`, through libnftables (libnft.py): nft's
    // own three processes per file cost more CPU than their work.
    const done = await libnft(
      t,
      files.flatMap((f) => [
        [
          ['nft', '-f', f],
          ['nft', '-j', 'list', 'ruleset'],
        ],
        [['nft', 'flush', 'ruleset']],
      ]),
    );
    const listed = done.filter((_, i) => i % 2 === 0).map((d) => d.stdout);
    t.equal(listed.length, nodes.length, 'a listing per firewall');
    const differ = listed.flatMap((json, k) => {
      const back = importedList(importRules('nftables', json, `fw${k}.json`));
      const d = diff(listOfNode(nodes[k]!, `fw ${k}`), back);
      return d.equivalent ? [] : [`firewall ${k}: ${d.classes.length} classes differ`];
    });
    t.same(differ.slice(0, 5), [], `all ${nodes.length} equivalent`);
  },
);
