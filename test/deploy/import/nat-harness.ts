/**
 * The kernel check of imported routers (docs/SEMANTICS.md, "Port forwards and masquerading"), shared by nat.test.ts
 * and nat-forms.part.ts: the router's own file is loaded by iptables-restore (or `nft -f`) into a namespace that is
 * the router (nat-probe.py, with two sides: wan and lan), real packets are sent through it, and what leaves on the
 * other side (header as translated, or nothing) is compared with what nfv's model makes of the same packet: the imported filter (first
 * match) and the NAT node as the test reads the semantics (its own code, not the engine's).
 */
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  importRules,
  importedNats,
  importedNode,
  interfaceMap,
  routeMap,
  type Imported,
} from '../../../src/deploy/import/index.js';
import type { Node } from '../../../src/model/types.js';
import { PYTHON, ROOT, runProcess, scratch, seeded } from '../../helpers.js';
import { exceptBoxes, ruleBoxes } from '../../../src/model/space.js';
import type { Packet } from '../nft-harness.js';

const probe = spawnSync('unshare', ['-rn', 'sh', '-c', 'iptables-restore --version && nft list ruleset'], {
  encoding: 'utf8',
});
/** Why the kernel check cannot run here, or empty. */
export const kernelWhy =
  probe.status !== 0 ? `iptables-restore and nft in a namespace: ${(probe.stderr || '').trim()}` : '';

const PROBE = path.join(ROOT, 'test', 'deploy', 'import', 'nat-probe.py');

/** A side of the probe's router: its interface, its own address on it, the prefixes routed out of it. */
export interface ProbeSide {
  name: string;
  address?: string;
  routes: string[];
}

/** Where a packet left the router and how: [side, src, dst, sport, dport], or null when it left by no side. */
export type Left = [string, string, string, number, number] | null;

/**
 * The kernel's answer to a probe job (nat-probe.py, in a namespace of its own): the file at `load` loaded as the
 * router's, each packet sent in by its side; checked that the probe ran and answered once per packet.
 */
export async function probeKernel(
  t: { teardown: (fn: () => unknown) => void; equal: (a: unknown, b: unknown, m: string) => unknown },
  job: { sides: ProbeSide[]; load: string; packets: readonly unknown[]; loader?: string },
  label: string,
  timeoutMs = 600_000,
): Promise<Left[]> {
  const run = await runProcess(t, 'unshare', ['-rn', PYTHON, PROBE], JSON.stringify(job), timeoutMs);
  t.equal(run.code, 0, `${label}the probe ran${run.stderr ? `: ${run.stderr.trim()}` : ''}`);
  const left = JSON.parse(run.stdout || '[]') as Left[];
  t.equal(left.length, job.packets.length, `${label}one answer per packet`);
  return left;
}

/** The tests' seeded generator, with `int(lo, hi)` taking both ends. */
export function generator(seed: number) {
  const g = seeded(seed);
  return { ...g, int: (lo: number, hi: number) => lo + g.int(hi - lo + 1) };
}

export type Side = 'out' | 'in';
export type Sent = [number, string, string, number, number, Side];
export type Seen = [string, string, number, number] | null;

export const octets = (a: string) => a.split('.').map(Number);
const num = (a: string) => octets(a).reduce((v, o) => v * 256 + o, 0);
export const inPrefix = (a: string, prefix: string) => {
  const [base, len = '32'] = prefix.split('/');
  const size = 2 ** (32 - Number(len));
  return Math.floor(num(a) / size) === Math.floor(num(base!) / size);
};
/** An octet pattern of the NAT node's sources (-1: any). */
export const inPattern = (a: string, pattern: string) => {
  const o = octets(a);
  return pattern.split('.').every((p, k) => p === '-1' || Number(p) === o[k]);
};
/** Each list of patterns read once (the lists are the NAT nodes' own, never changed): the home router's are 765. */
const readPatterns = new WeakMap<readonly string[], number[][]>();
/** An address within some pattern of `patterns`, as inPattern says; per packet, not a split per pattern. */
export function inSome(a: string, patterns: readonly string[]): boolean {
  let read = readPatterns.get(patterns);
  if (!read) readPatterns.set(patterns, (read = patterns.map(octets)));
  const o = octets(a);
  return read.some((p) => p.every((v, k) => v === -1 || v === o[k]));
}

export interface Router {
  file: string;
  /** An nft ruleset (text) instead of an iptables-save file. */
  nft?: boolean;
  text: string;
  wan: string;
  lan: string;
  nat: string;
  inside: string[];
  iface: string[];
  /** `ip route` text for --routes instead of --iface. */
  routes?: string;
  /** The NAT node's sides are not the router's interfaces exactly: a forward's -i is read as "from outside P". */
  insideForwarded?: boolean;
  packets: Sent[];
  /**
   * The filter has approximated lines: a packet is compared only where its may and must lists agree (the others
   * are counted, `uncertain`).
   */
  approximated?: boolean;
  /** Loaded by iptables-legacy-restore: iptables-nft sends a large file in one message the kernel refuses. */
  legacy?: boolean;
}

export interface Tally {
  /** The NAT node's hidden patterns, forward table and translate list, as nfv read them. */
  sources: string[];
  forwards: Forward[];
  translates: Translate[];
  exact: number;
  /** Packets an approximated line decides (may and must lists differ): not compared. */
  uncertain: number;
  inside: number;
  translated: number;
  /** Of those, sent on by the forward table (the rest: sources translated). */
  forwarded: number;
  wrong: string[];
}

export type Forward = NonNullable<NonNullable<NonNullable<Node['configuration']>['nat']>['forward']>[number];
export type Translate = NonNullable<NonNullable<NonNullable<Node['configuration']>['nat']>['translate']>[number];

/** An address within a pattern or prefix, `*` any. */
const within = (a: string, where: string) =>
  where === '*' || (where.includes('/') ? inPrefix(a, where) : inPattern(a, where));

/**
 * Where the NAT node's forward table sends a packet, as docs/SEMANTICS.md says (the test's reading of it, not the
 * engine's): the first entry whose protocol and destination port match (ANY with a port: TCP and UDP), whose source
 * (if it names one) holds the packet's and whose destination (the NAT unless it names another) the packet's; its
 * host and its port (or the packet's); undefined where no entry matches.
 */
export function tableSends(forwards: Forward[], nat: string, p: Sent): [string, number] | undefined {
  const [proto, src, dst, , dport] = p;
  const named = proto === 6 ? 'TCP' : proto === 17 ? 'UDP' : 'OTHER';
  for (const f of forwards) {
    const [lo, hi] = (f.dstPort ?? '0-65535').split('-').map(Number) as [number, number?];
    const protocol = f.protocol ?? 'ANY';
    const ported = f.dstPort !== undefined;
    if (protocol !== 'ANY' && protocol !== named) continue;
    if (ported && (named === 'OTHER' || dport < lo || dport > (hi ?? lo))) continue;
    if (f.src !== undefined && !within(src, f.src)) continue;
    if (!within(dst, f.dst ?? nat)) continue;
    return [f.to, f.toPort === undefined ? dport : Number(f.toPort)];
  }
  return undefined;
}

/**
 * Whether the NAT node's translate list takes a packet (docs/SEMANTICS.md, "Translation by destination", as the
 * test reads it): some entry whose protocol, destination port, source (if it names one) and destination match.
 */
export function translateTakes(translates: Translate[], p: Sent): boolean {
  const [proto, src, dst, , dport] = p;
  const named = proto === 6 ? 'TCP' : proto === 17 ? 'UDP' : 'OTHER';
  return translates.some((f) => {
    const [lo, hi] = (f.dstPort ?? '0-65535').split('-').map(Number) as [number, number?];
    const protocol = f.protocol ?? 'ANY';
    if (protocol !== 'ANY' && protocol !== named) return false;
    if (f.dstPort !== undefined && (named === 'OTHER' || dport < lo || dport > (hi ?? lo))) return false;
    return (f.src === undefined || within(src, f.src)) && within(dst, f.dst);
  });
}

/** Each imported node's rules as boxes, worked out once: the chair's router has 10,000 of them. */
const boxed = new WeakMap<Node, { allow: boolean; boxes: number[][]; except: readonly number[][] }[]>();

/**
 * nfv's first-match verdict on the imported filter (the engine's meaning of each element, `ruleBoxes` less its
 * `exceptBoxes`; nft-harness.ts's nfvVerdict reads nodes without them), each rule's boxes kept per node.
 */
export function nfvVerdict(node: Node, p: Packet): boolean {
  const fw = node.configuration!.firewall!;
  let rules = boxed.get(node);
  if (!rules) {
    rules = (fw.elements ?? []).map((e) => ({
      allow: (e.action ?? 'DENY') === 'ALLOW',
      boxes: ruleBoxes(e),
      except: exceptBoxes(e),
    }));
    boxed.set(node, rules);
  }
  const proto = p.proto === 6 ? 0 : p.proto === 17 ? 1 : 2;
  const point = [...p.src, ...p.dst, p.sport, p.dport, proto];
  const inBox = (b: readonly number[]) => point.every((v, d) => v >= b[2 * d]! && v <= b[2 * d + 1]!);
  // A rule matches none of its except boxes' packets (what a RETURN before its line handed back).
  for (const r of rules) if (r.boxes.some(inBox) && !r.except.some(inBox)) return r.allow;
  return fw.defaultAction === 'ALLOW';
}

/** A packet an approximated line decides: the may and must lists differ on it. */
class Uncertain extends Error {}

/**
 * The model's answer for one packet: the imported filter, then (or before) the NAT node with its forward table
 * and translate list. `must`: the filter's must list, where the may list (`node`) is approximated.
 */
export function compare(
  r: Router,
  node: Node,
  t: Pick<Tally, 'sources' | 'forwards' | 'translates'>,
  p: Sent,
  seen: Seen,
  tally: Tally,
  must?: Node,
) {
  try {
    decideOne(r, node, t, p, seen, tally, must);
  } catch (e) {
    if (!(e instanceof Uncertain)) throw e;
    tally.uncertain++;
  }
}

function decideOne(
  r: Router,
  node: Node,
  t: Pick<Tally, 'sources' | 'forwards' | 'translates'>,
  p: Sent,
  seen: Seen,
  tally: Tally,
  must?: Node,
) {
  const [proto, src, dst, sport, dport, side] = p;
  const hidden = (a: string) => inSome(a, t.sources);
  const allowed = (s: string, d: string, port = dport) => {
    const packet: Packet = { proto, src: octets(s), dst: octets(d), sport, dport: port };
    const verdict = nfvVerdict(node, packet);
    if (must && nfvVerdict(must, packet) !== verdict) throw new Uncertain();
    return verdict;
  };
  const say = (expected: Seen, why: string) => {
    if (JSON.stringify(expected) === JSON.stringify(seen)) tally.exact++;
    else
      tally.wrong.push(
        `${JSON.stringify(p)}: kernel ${JSON.stringify(seen)}, model ${JSON.stringify(expected)} (${why})`,
      );
  };
  if (!hidden(src) && src !== r.nat) {
    // From outside what the NAT hides: the forward table, else on unchanged (to N: delivered there).
    const sent = tableSends(t.forwards, r.nat, p);
    if (side === 'in' && sent && r.insideForwarded) {
      // Documented: the table reads -i as "from outside P"; the kernel's line takes packets from outside only.
      tally.inside++;
      if (seen !== null) tally.wrong.push(`${JSON.stringify(p)}: from inside, yet ${JSON.stringify(seen)}`);
      return;
    }
    if (sent) {
      const [to, port] = sent;
      if (seen) [tally.translated, tally.forwarded] = [tally.translated + 1, tally.forwarded + 1];
      return say(allowed(src, to, port) ? [src, to, sport, port] : null, `forwarded to ${to}:${port}`);
    }
    if (dst === r.nat) return say(null, 'to N, no forward: delivered to the router');
  } else if (dst === r.nat) return say(null, 'to the NAT from what it hides: delivered there');
  // Elsewhere: the filter, then the NAT node: a hidden source to outside what it hides becomes N.
  if (!allowed(src, dst)) return say(null, 'dropped by the filter');
  // With a translate list only the packets it takes are translated, whether their destination is hidden or not.
  const translated = t.translates.length ? translateTakes(t.translates, p) : !hidden(dst);
  const out = hidden(src) && translated ? r.nat : src;
  if (out !== src && seen) tally.translated++;
  return say([out, dst, sport, dport], side === 'in' ? 'from inside' : 'from outside, not to the NAT');
}

export async function kernelCheck(t: typeof import('tap'), r: Router): Promise<Tally> {
  const dir = await scratch(t, 'nfv-nat-');
  const load = path.join(dir, r.file);
  await writeFile(load, r.text);
  let text = r.text;
  if (r.nft) {
    // nft's own JSON listing of the text, as `nfv import` has nft make it.
    const listed = spawnSync('unshare', ['-rn', 'sh', '-c', 'nft -f "$1" && nft -j list ruleset', 'sh', load], {
      encoding: 'utf8',
    });
    t.equal(listed.status, 0, `nft lists the ruleset${listed.stderr ? `: ${listed.stderr}` : ''}`);
    text = listed.stdout;
  }
  const format = r.nft ? 'nftables' : 'iptables';
  const iface = r.routes === undefined ? interfaceMap(r.iface) : routeMap(r.routes, 'routes');
  const imported = importRules(format, text, r.file, { natAddress: r.nat, iface });
  const node = importedNode(imported, '10.255.0.1', 'may').node;
  const must = r.approximated ? importedNode(imported, '10.255.0.1', 'must').node : undefined;
  const nat = onlyNat(imported)!.configuration!.nat!;
  const [sources, forwards, translates] = [nat.source ?? [], nat.forward ?? [], nat.translate ?? []];
  // The outside: the router's address on it, the default route; the inside: the prefixes of `inside`.
  const sides = [
    { name: r.wan, address: r.nat, routes: ['0.0.0.0/0'] },
    { name: r.lan, address: '192.0.2.9', routes: r.inside },
  ];
  const packets = r.packets.map(([proto, src, dst, sport, dport, side]) => [
    ...[proto, src, dst, sport, dport],
    side === 'out' ? r.wan : r.lan,
  ]);
  const job = { sides, load, packets, loader: r.nft ? 'nft' : r.legacy ? 'legacy' : '' };
  // With two sides a packet can leave by the other one only: its header as it left.
  const left = await probeKernel(t, job, '');
  const seen = left.map((x): Seen => (x ? [x[1], x[2], x[3], x[4]] : null));
  const tally: Tally = {
    sources,
    forwards,
    translates,
    exact: 0,
    uncertain: 0,
    inside: 0,
    translated: 0,
    forwarded: 0,
    wrong: [],
  };
  r.packets.forEach((p, k) => compare(r, node, tally, p, seen[k] ?? null, tally, must));
  t.same(tally.wrong.slice(0, 10), [], `${r.file}: the kernel decides each packet as the model does`);
  return tally;
}

/** An iptables-restore file of a generated router: its nat lines, then its filter (the FORWARD policy line first). */
export function routerFile(nats: string[], filter: string[]): string {
  const [policy, ...rules] = filter;
  return (
    `*nat\n${nats.join('\n')}\nCOMMIT\n*filter\n:INPUT ACCEPT [0:0]\n${policy}\n:OUTPUT ACCEPT [0:0]\n` +
    `${rules.join('\n')}\nCOMMIT\n`
  );
}

/** The NAT node of an import with one `--nat-address` address; undefined with none or several. */
export function onlyNat(imported: Imported) {
  const nats = importedNats(imported);
  return nats.length === 1 ? nats[0] : undefined;
}
