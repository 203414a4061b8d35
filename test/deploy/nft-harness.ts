/** The namespaces, rule-list generator and first-match evaluator the nftables tests share (see their headers). */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { random } from '../../src/bench/topology.js';
import { nftablesJson } from '../../src/deploy/nftables.js';
import { ruleBox, ruleBoxes } from '../../src/model/space.js';
import type { Elements, Node } from '../../src/model/types.js';
import { PYTHON, ROOT, runProcess, scratch, type seeded } from '../helpers.js';

/**
 * New user, network and PID namespaces: nft runs as their root, and when the process started in them ends (or is
 * killed, at its deadline or with the test), every process in them goes too, and the network namespace with them.
 */
export const NAMESPACES = ['-rnp', '--fork', '--kill-child'];
export const inNamespace = (script: string) =>
  spawnSync('unshare', [...NAMESPACES, 'sh', '-c', script], { encoding: 'utf8', timeout: 20_000 });
export const probe = inNamespace('nft list ruleset');
export const said = (r: ReturnType<typeof inNamespace>) => (r.stderr || String(r.error)).trim();
export const nftWhy = `nft in a user and network namespace is not available here (${said(probe)})`;
export { PYTHON };
export const veth = inNamespace('ip link add a0 type veth peer name a1');
export const packetsWhy =
  probe.status !== 0
    ? nftWhy
    : !existsSync(PYTHON)
      ? `${PYTHON} is not installed here (the packet sender)`
      : veth.status !== 0
        ? `veth pairs cannot be made in a network namespace here (${veth.stderr.trim()})`
        : '';
export const iptablesProbe = inNamespace('iptables -S FORWARD');
export const iptablesWhy = iptablesProbe.status === 0 ? '' : `iptables in a namespace: ${iptablesProbe.stderr.trim()}`;
if (process.env.CI === 'true') {
  // CI installs them (.ci/run): a check skipped there would be a check never run.
  for (const why of [probe.status === 0 ? '' : nftWhy, packetsWhy, iptablesWhy])
    if (why) t.fail(`${why}; under CI=true .ci/run must provide it`);
}
export const skipNft = probe.status !== 0 && nftWhy;
/** For the tests that run nft's commands through libnft.py (libnftables in one Python process). */
export const skipLibnft = skipNft || (!existsSync(PYTHON) && `${PYTHON} is not installed here (runs libnftables)`);

/** A step's commands (argvs: `nft ...` through libnftables, others as processes) and what the step did. */
export type Step = string[][];
export interface Done {
  code: number;
  ran: number;
  stdout: string;
  stderr: string;
}

/**
 * A base chain at each IPv4 hook and a conntrack rule, held in a network namespace of their own while this process
 * runs (one `nft -i`, ended by the end of its input: at this process's exit, whatever the exit). The kernel turns a
 * hook point's static key on when a first hook anywhere registers there and off when the last goes, patching its code
 * and interrupting every CPU each time: a check or load in an otherwise empty namespace did that a few times, most of
 * an `nft -j -c`'s CPU on this machine (300 checks: 2.0 -> 0.5 CPU s). Hooks are per namespace: nothing a test loads,
 * lists or sends sees these. Once per process; the harness's kernel runs call it (without nft, a no-op: they skip).
 */
let hooksHeld: Promise<void> | undefined;
export function holdHooks(): Promise<void> {
  if (probe.status !== 0) return Promise.resolve();
  hooksHeld ??= new Promise<void>((resolve, reject) => {
    const keeper = spawn('unshare', ['-rn', 'nft', '-i'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let said = '';
    const listed = (d: string) => {
      said += d;
      if (!/^}$/m.test(said)) return;
      keeper.stdout.off('data', listed);
      // Not a reason for this process to stay: its input closes with it.
      for (const handle of [keeper, keeper.stdin, keeper.stdout, keeper.stderr]) handle.unref();
      resolve();
    };
    keeper.stdout.setEncoding('utf8').on('data', listed);
    // nft -i says nothing on stderr unless a command failed; it would then wait for more input, and the listing
    // never comes.
    keeper.stderr.setEncoding('utf8').on('data', (d: string) => {
      keeper.kill('SIGKILL');
      reject(new Error(`nft -i holding the hooks: ${d.trim()}`));
    });
    keeper.on('error', reject);
    keeper.on('close', (code) => reject(new Error(`nft -i holding the hooks exited ${code}: ${said.trim()}`)));
    keeper.stdin.on('error', () => {});
    const hooks = ['prerouting', 'input', 'forward', 'output', 'postrouting'];
    keeper.stdin.write(
      [
        'add table ip nfv_hooks',
        ...hooks.map((h) => `add chain ip nfv_hooks ${h} { type filter hook ${h} priority 0; policy accept; }`),
        'add rule ip nfv_hooks forward ct state established,related accept',
        'list table ip nfv_hooks',
        '',
      ].join('\n'),
    );
  });
  return hooksHeld;
}

/** `command` in new user, network and pid namespaces (`unshare`), the kernel's hooks held first (`holdHooks`). */
export async function unshared(t: Tap.Test, command: string[], input?: string, timeoutMs?: number) {
  await holdHooks();
  return runProcess(t, 'unshare', [...NAMESPACES, ...command], input, timeoutMs);
}

/**
 * Runs `steps` in one new namespace (libnft.py: each step's commands in turn until one fails, as `&&` in sh): a
 * Python process calling libnftables as nft's main() does, where a process per nft command cost more CPU than its
 * work. No limit of its own: tap's per file is the bound (a namespace cut on a loaded machine said nothing).
 */
export async function libnft(t: Tap.Test, steps: Step[]): Promise<Done[]> {
  const script = path.join(ROOT, 'test', 'deploy', 'libnft.py');
  const r = await unshared(t, [PYTHON, script], JSON.stringify(steps));
  if (r.code !== 0) throw new Error(`libnft.py exited ${r.code}: ${r.stderr.trim()}`);
  const done = JSON.parse(r.stdout) as Done[];
  if (done.length !== steps.length) throw new Error(`libnft.py answered ${done.length} of ${steps.length} steps`);
  return done;
}

/** Runs `jobs` over `workers` namespaces at once (nft's checks wait on the kernel more than they compute). */
export async function inWorkers<T, R>(items: T[], workers: number, each: (slice: T[], k: number) => Promise<R>) {
  const size = Math.ceil(items.length / workers);
  const slices = Array.from({ length: workers }, (_, k) => items.slice(k * size, (k + 1) * size)).filter(
    (s) => s.length,
  );
  return Promise.all(slices.map(each));
}

// ---------------------------------------------------------------------------------------------------------------
// Seeded random firewalls

export const OCTETS = [
  [10, 20, 172, 192],
  [0, 1, 16, 168],
  [0, 1, 2, 255],
  [1, 2, 5, 254],
];
export const PORTS = [0, 22, 53, 80, 443, 1000, 1023, 1024, 2000, 65535];
export const PREFIXES = [0, 1, 8, 9, 12, 16, 20, 24, 25, 28, 30, 31, 32];
// ICMP, GRE, ESP, SCTP (SCTP has ports where TCP has them: the rules must not read them)
export const OTHER_PROTOCOLS = [1, 47, 50, 132];

export function generator(seed: number) {
  const rnd = random(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)]!;
  const pattern = () => {
    if (rnd() < 0.1) return rnd() < 0.5 ? '*' : '-1.-1.-1.-1';
    if (rnd() < 0.3) {
      // A CIDR prefix of any length: an address of the pools with its host bits cleared.
      const length = pick(PREFIXES);
      const value = OCTETS.reduce((v, pool) => v * 256 + pick(pool), 0);
      const network = value - (value % 2 ** (32 - length));
      return `${[3, 2, 1, 0].map((k) => Math.floor(network / 256 ** k) % 256).join('.')}/${length}`;
    }
    return OCTETS.map((pool) => (rnd() < 0.3 ? -1 : pick(pool))).join('.');
  };
  const ports = (): string | undefined => {
    const x = rnd();
    if (x < 0.2) return undefined;
    if (x < 0.55) return '*';
    const [a, b] = [pick(PORTS), pick(PORTS)];
    return x < 0.8 ? String(a) : `${Math.min(a, b)}-${Math.max(a, b)}`;
  };
  const element = (): Elements => {
    const e: Elements = { source: pattern(), destination: pattern() };
    if (rnd() < 0.9) e.action = rnd() < 0.5 ? 'ALLOW' : 'DENY';
    const protocol = pick([undefined, 'ANY', 'TCP', 'UDP', 'OTHER'] as const);
    if (protocol) e.protocol = protocol;
    // Ports need TCP or UDP (OTHER with ports is refused): an OTHER rule gets none, or the full range.
    const [sp, dp] = protocol === 'OTHER' ? [pick([undefined, '*', '0-65535']), undefined] : [ports(), ports()];
    if (sp !== undefined) e.srcPort = sp;
    if (dp !== undefined) e.dstPort = dp;
    if (rnd() < 0.25) e.directional = rnd() < 0.8;
    return e;
  };
  const firewall = (maxRules: number): Node => ({
    id: 1,
    name: '10.255.0.1',
    functionalType: 'FIREWALL',
    configuration: {
      name: 'fw',
      firewall: {
        defaultAction: rnd() < 0.5 ? 'ALLOW' : 'DENY',
        elements: Array.from({ length: Math.floor(rnd() * (maxRules + 1)) }, element),
      },
    },
  });
  return { rnd, pick, firewall, element };
}

// ---------------------------------------------------------------------------------------------------------------
// The evaluator: a node's elements read as documented, first match, shares nothing with src/deploy

export interface Packet {
  proto: number; // IP protocol number: 6 TCP, 17 UDP, others have no ports
  src: number[];
  dst: number[];
  sport: number;
  dport: number;
}

/** A 32-bit address as a number. */
export const numberOf = (ip: number[]) => ip.reduce((v, o) => v * 256 + o, 0);

/** The addresses of a rule address, low to high when it is a prefix (`A.B.C.D/P`), else undefined. */
export function prefixRange(pattern: string): [number, number] | undefined {
  const [address, length] = pattern.split('/');
  if (length === undefined) return undefined;
  const size = 2 ** (32 - Number(length));
  const lo = numberOf(address!.split('.').map(Number));
  return [lo - (lo % size), lo - (lo % size) + size - 1];
}

export function octetsMatch(pattern: string, ip: number[]) {
  const prefix = prefixRange(pattern);
  if (prefix) return numberOf(ip) >= prefix[0] && numberOf(ip) <= prefix[1];
  return (pattern.trim() === '*' ? ['-1', '-1', '-1', '-1'] : pattern.split('.')).every(
    (o, k) => o.trim() === '-1' || Number(o) === ip[k],
  );
}
export const anyPort = (spec: string | undefined) =>
  spec === undefined || spec === '*' || spec === 'null' || spec === '';
export function portMatch(spec: string | undefined, port: number) {
  if (anyPort(spec)) return true;
  const [lo, hi = lo] = spec!.split('-').map(Number) as [number, number?];
  return port >= lo && port <= hi!;
}

export function matches(e: Elements, p: Packet, reverse: boolean): boolean {
  const [src, dst] = reverse ? [e.destination, e.source] : [e.source, e.destination];
  const [sp, dp] = reverse ? [e.dstPort, e.srcPort] : [e.srcPort, e.dstPort];
  if (!octetsMatch(src, p.src) || !octetsMatch(dst, p.dst)) return false;
  const hasPorts = p.proto === 6 || p.proto === 17;
  switch (e.protocol ?? 'ANY') {
    case 'TCP':
      if (p.proto !== 6) return false;
      break;
    case 'UDP':
      if (p.proto !== 17) return false;
      break;
    case 'OTHER':
      return !hasPorts; // neither TCP nor UDP; it has no ports (the generator gives it none)
  }
  if (anyPort(sp) && anyPort(dp)) return true;
  return hasPorts && portMatch(sp, p.sport) && portMatch(dp, p.dport);
}

export function verdict(node: Node, p: Packet): boolean {
  const fw = node.configuration!.firewall!;
  for (const e of fw.elements ?? [])
    for (const reverse of e.directional === true ? [false, true] : [false])
      if (matches(e, p, reverse)) return (e.action ?? 'DENY') === 'ALLOW';
  return fw.defaultAction === 'ALLOW';
}

/**
 * nfv's own first-match verdict: the engine's meaning of each element (`ruleBoxes`: a directional element matches
 * its reverse too). A packet of another protocol is at protocol OTHER with the values its port fields carry, which
 * must not matter.
 */
export function nfvVerdict(node: Node, p: Packet): boolean {
  const fw = node.configuration!.firewall!;
  const proto = p.proto === 6 ? 0 : p.proto === 17 ? 1 : 2;
  const point = [...p.src, ...p.dst, p.sport, p.dport, proto];
  const inBox = (b: readonly number[]) => point.every((v, d) => v >= b[2 * d]! && v <= b[2 * d + 1]!);
  for (const e of fw.elements ?? []) if (ruleBoxes(e).some(inBox)) return (e.action ?? 'DENY') === 'ALLOW';
  return fw.defaultAction === 'ALLOW';
}

/** Packets for a firewall: half over the values its rules use, half at the edges of a rule's box. */
export function packetsFor(node: Node, count: number, g: ReturnType<typeof generator>): Packet[] {
  const { rnd, pick } = g;
  const unicast = (v: number) => v >= 1 && v <= 223 && v !== 127; // other first octets never reach the forward hook
  const octet = (k: number) => (rnd() < 0.8 ? pick(OCTETS[k]!) : Math.floor(rnd() * 256));
  const address = () => OCTETS.map((_, k) => octet(k));
  const fix = (ip: number[]) => (unicast(ip[0]!) ? ip : [pick(OCTETS[0]!), ...ip.slice(1)]);
  const port = () => (rnd() < 0.8 ? pick(PORTS) : Math.floor(rnd() * 65536));
  const proto = () => pick([6, 6, 17, 17, ...OTHER_PROTOCOLS]);
  const edge = (lo: number, hi: number, top: number) =>
    pick([lo, hi, lo - 1, hi + 1].filter((v) => v >= 0 && v <= top));
  const elements = node.configuration!.firewall!.elements ?? [];
  const out: Packet[] = [];
  while (out.length < count) {
    const e = elements.length && rnd() < 0.5 ? pick(elements) : undefined;
    if (!e) {
      out.push({ proto: proto(), src: fix(address()), dst: fix(address()), sport: port(), dport: port() });
      continue;
    }
    const side = (p: string) => {
      const prefix = prefixRange(p);
      if (prefix) {
        // At the prefix's first or last address or just outside it.
        const v = edge(prefix[0], prefix[1], 2 ** 32 - 1);
        return [3, 2, 1, 0].map((k) => Math.floor(v / 256 ** k) % 256);
      }
      return (p.trim() === '*' ? ['-1', '-1', '-1', '-1'] : p.split('.')).map((o) =>
        o.trim() === '-1' ? edge(0, 255, 255) : edge(Number(o), Number(o), 255),
      );
    };
    const ports = (spec: string | undefined) => {
      if (anyPort(spec)) return port();
      const [lo, hi = lo] = spec!.split('-').map(Number) as [number, number?];
      return edge(lo, hi!, 65535);
    };
    const protocol = { TCP: 6, UDP: 17, OTHER: pick(OTHER_PROTOCOLS) }[e.protocol as string] ?? proto();
    out.push({
      proto: rnd() < 0.85 ? protocol : proto(),
      src: fix(side(e.source)),
      dst: fix(side(e.destination)),
      sport: ports(e.srcPort),
      dport: ports(e.dstPort),
    });
  }
  return out;
}

/** Each set's elements sorted. */
export const sortedSets = (text: string) =>
  text.replace(/\{ ([^{}]*) \}/g, (_, items: string) => `{ ${items.split(', ').sort().join(', ')} }`);
export const body = (text: string) => text.slice(text.indexOf('table ip nfv {'));
export const ruleLines = (text: string) =>
  body(text)
    .split('\n')
    .filter((l) => l.startsWith('\t\t') && !l.startsWith('\t\ttype '));

/**
 * `nft -j -c` (parser and kernel check) on lists `from` to `to` (exclusive) of the 1,000 seeded random rule lists of
 * nftables.test.ts (the same seed and sizes), as JSON, with and without --sets, stateful and --stateless in turn; with
 * a control nft refuses. Two files share the 1,000 (nftables-json*.test.ts) so that neither runs past tap's limit on
 * a busy machine. Each file is one `nft -j -c -f FILE` through libnftables (libnft.py): nft's own process per file
 * cost 23 ms of CPU, 14 ms of it before reading the file (nft's interactive mode reads JSON a byte at a time).
 */
export async function checkJsonLists(t: Tap.Test, from: number, to: number): Promise<void> {
  const dir = path.join(await scratch(t), 'lists');
  await mkdir(dir);
  const g = generator(2311);
  const files: string[] = [];
  for (let k = 0; k < to; k++) {
    const node = g.firewall(40);
    if (k < from) continue;
    for (const sets of [false, true]) {
      const name = path.join(dir, `${k}${sets ? '.sets' : ''}.json`);
      await writeFile(name, nftablesJson(node, k, { sets, stateless: k % 2 === 1 }));
      files.push(name);
    }
  }
  const started = Date.now();
  const badJson = path.join(dir, 'bad.json');
  await writeFile(badJson, nftablesJson(g.firewall(0), 0).replace('"policy":"', '"policy":"x'));
  // Two namespaces, one Python process each: both cores busy, few start-ups.
  const json = await inWorkers([badJson, ...files], 2, async (slice) => {
    const done = await libnft(
      t,
      slice.map((f) => [['nft', '-j', '-c', '-f', f]]),
    );
    return slice.filter((_, i) => done[i]!.code !== 0);
  });
  t.same(json.flat().slice(0, 1), [badJson], 'the refused JSON control is said');
  t.same(json.flat().slice(1), [], `nft -j -c accepts all ${files.length} JSON files`);
  t.comment(`${files.length + 1} JSON files checked in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/**
 * A TCP or UDP packet from one of `sources` to one of `destinations` (source port `sport`) as forward.py sends it,
 * with its box for nfv's analyses and a line saying it.
 */
export function sampledPacket(g: ReturnType<typeof seeded>, sources: string[], destinations: string[], sport: number) {
  const src = g.pick(sources);
  const dst = g.pick(destinations);
  const [proto, name] = g.pick([
    [6, 'TCP'],
    [17, 'UDP'],
  ] as const);
  const dport = g.pick([22, 80, 443, 5000]);
  const box = ruleBox({
    source: src,
    destination: dst,
    protocol: name,
    srcPort: String(sport),
    dstPort: String(dport),
  });
  return { src, packet: [proto, src, dst, sport, dport] as unknown[], box, said: `${src} -> ${dst} ${name} ${dport}` };
}

/**
 * forward.py's unload of an iptables job: iptables-nft's filter table deleted through libnftables in forward.py's own
 * process (sh with iptables -P, -F and -X, or an iptables-restore of empty chains, was processes per job); the next
 * iptables job's load makes it anew.
 */
export const UNLOAD_IPTABLES = ['nft', 'delete', 'table', 'ip', 'filter'];

/** One iptables-save rule set for forward.py, the packets to send through it and what nfv says of each. */
export interface ForwardCase {
  rules: string;
  packets: unknown[];
  want: { said: string; nfv: boolean }[];
}

/**
 * Loads each case's rule set with iptables-restore in one namespace sandbox and sends its packets as raw frames
 * (forward.py, one zone per case); answers the kernel's verdicts (forwarded or not) and where nfv differs from them.
 */
export async function kernelForwards(t: Tap.Test, cases: ForwardCase[]) {
  const dir = await scratch(t);
  const jobs = await Promise.all(
    cases.map(async ({ rules, packets }, k) => {
      const file = path.join(dir, `${k}.rules`);
      await writeFile(file, rules);
      return { load: ['iptables-restore', file], unload: UNLOAD_IPTABLES, packets };
    }),
  );
  const script = path.join(ROOT, 'test', 'deploy', 'forward.py');
  const r = await unshared(t, [PYTHON, script], JSON.stringify(jobs));
  if (r.code !== 0) throw new Error(`forward.py exited ${r.code}: ${r.stderr.trim()}`);
  const kernel = JSON.parse(r.stdout) as boolean[][];
  const differ: string[] = [];
  let forwarded = 0;
  let total = 0;
  cases.forEach(({ want }, k) =>
    want.forEach((w, i) => {
      const forwards = kernel[k]![i]!;
      total++;
      if (forwards) forwarded++;
      if (forwards !== w.nfv)
        differ.push(`${w.said}: kernel ${forwards ? 'forwards' : 'drops'}, nfv ${w.nfv ? 'allows' : 'denies'}`);
    }),
  );
  return { kernel, differ, forwarded, total };
}
