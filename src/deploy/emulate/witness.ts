/**
 * The model of an answer on concrete packets, for the emulation: where a probe goes (its addresses and ports hop by
 * hop, each NAT translating as docs/SEMANTICS.md says), and a witness path per requirement: a simple path on which
 * the model lets some packet of its traffic through (every packet, for a complete reachability), each firewall's
 * rules read first match. The engine's answer carries no path, and the shortest paths pinned for a pair may all
 * cross a firewall that drops the class while a longer one passes it (docs/emulate.md, witness paths).
 *
 * Its own code on purpose: it reads the answer's rules and NATs as the semantics states them, one packet at a time,
 * and shares nothing with the engine's flows or solver, so that a kernel agreeing with it checks the engine.
 */
import { DPORT, PROTO, SPORT, boxOf, contains, exceptBoxes, ruleBoxes, type Box } from '../../model/space.js';
import type { Node } from '../../model/types.js';

/** A packet as a probe carries it: addresses, protocol (0 TCP, 1 UDP, 2 OTHER) and ports. */
export interface Packet {
  src: string;
  dst: string;
  proto: number;
  sport: number;
  dport: number;
}

/** A NAT node of the emulation: its address, the patterns it hides, its forward table (first match) if any. */
export interface NatNode {
  addr: string;
  hidden: number[][];
  /** The table's entries: the packets each takes (protocol and destination port bounds), its host and port. */
  /** Its entries in order; `src` and `dst` as written (absent: any outside source, the NAT's own address). */
  forward?: { match: Box; to: string; toPort?: number; src?: string; dst?: string }[];
  /** Its translate list (SNAT by destination): the packets whose source it makes its own; `src`, `dst` as written. */
  translate?: { match: Box; src?: string; dst: string }[];
}

/** What the search and the walks read of the answer. */
export interface Net {
  nodes: Node[];
  addr: string[];
  next: number[][];
  transit: (k: number) => boolean;
  nats: Map<number, NatNode>;
  /** Per firewall node: its rules' boxes with their action, in order, and its default. */
  firewalls: Map<number, { rules: FirewallRule[]; allow: boolean }>;
}

/** Packets the search tries per requirement at most (the classes its rules cut, spread evenly beyond that). */
export const WITNESS_PACKETS = 64;
/** States the search visits per requirement at most (a state: a node and the headers it holds there). */
export const WITNESS_STEPS = 200_000;

export const hides = (hidden: number[][], address: string) => {
  const o = address.split('.').map(Number);
  return hidden.some((h) => h.every((x, i) => x === -1 || x === o[i]));
};

/** A rule as a box with its action; it matches none of the packets of its except boxes. */
export interface FirewallRule {
  allow: boolean;
  box: Box;
  except: readonly Box[];
}

/** The firewall rules of a node as boxes with their action (a directional rule's reverse right after it). */
export function firewallOf(node: Node): { rules: FirewallRule[]; allow: boolean } {
  const fw = node.configuration?.firewall;
  return {
    rules: (fw?.elements ?? []).flatMap((e) =>
      ruleBoxes(e).map((box) => ({ allow: e.action === 'ALLOW', box, except: exceptBoxes(e) })),
    ),
    allow: fw?.defaultAction === 'ALLOW',
  };
}

/** A NAT node's table as boxes (protocol and destination port): ANY with a port is TCP and UDP, as for rules. */
export function forwardTable(node: Node, addressOf: (to: string) => string): NatNode['forward'] {
  const table = node.configuration?.nat?.forward;
  if (!table?.length) return undefined;
  return table.map((f) => ({
    match: boxOf({ src: f.src ?? '*', dst: f.dst ?? node.name, dstPort: f.dstPort, proto: f.protocol }),
    to: addressOf(f.to),
    toPort: f.toPort === undefined ? undefined : Number(f.toPort),
    src: f.src,
    dst: f.dst,
  }));
}

/** A NAT node's translate list as boxes (protocol, destination port, source and destination), if it has one. */
export function translateList(node: Node): NatNode['translate'] {
  const list = node.configuration?.nat?.translate;
  if (!list) return undefined;
  return list.map((f) => ({
    match: boxOf({ src: f.src ?? '*', dst: f.dst, dstPort: f.dstPort, proto: f.protocol }),
    src: f.src,
    dst: f.dst,
  }));
}

const point = (p: Packet): Box => {
  const b: number[] = [];
  for (const o of [...p.src.split('.'), ...p.dst.split('.')].map(Number)) b.push(o, o);
  b.push(p.sport, p.sport, p.dport, p.dport, p.proto, p.proto);
  return b;
};

/** The first entry of a forward table taking a packet (its addresses, protocol and destination port), if any. */
export function forwardOf(nat: NatNode, p: Packet) {
  // An entry's box holds every source port, and OTHER packets only where it names no port: the packet's point decides.
  const at = point(p);
  return nat.forward?.find((f) => contains(f.match, at));
}

export type Step =
  | { kind: 'on'; packet: Packet; dnat?: boolean }
  | { kind: 'delivered' }
  | { kind: 'dropped' }
  /** Sent by a NAT without a table towards a hidden host other than the requirement's destination. */
  | { kind: 'elsewhere' };

/**
 * A packet passing transit node k: a NAT translates it (docs/SEMANTICS.md: from outside its patterns to its
 * address, the first forward entry's host and port, or delivered there without one; without a table, to the hidden
 * host `dst`, the requirement's destination; from a hidden host outwards, its source becomes the NAT's address); a
 * node addressed by it takes it; a firewall (with `rules`) lets it on or drops it, first match.
 */
export function passNode(net: Net, k: number, p: Packet, dst: string, rules: boolean): Step {
  const nat = net.nats.get(k);
  if (nat) {
    const outside = p.src !== nat.addr && !hides(nat.hidden, p.src);
    // A forward entry may take packets to other addresses too (its dst); one no entry takes goes on unchanged.
    const f = outside ? forwardOf(nat, p) : undefined;
    if (f) return { kind: 'on', packet: { ...p, dst: f.to, dport: f.toPort ?? p.dport }, dnat: true };
    if (p.dst === nat.addr) {
      if (!outside || nat.forward) return { kind: 'delivered' };
      if (!hides(nat.hidden, dst)) return { kind: 'elsewhere' };
      return { kind: 'on', packet: { ...p, dst }, dnat: true };
    }
    // With a translate list only the packets an entry takes, whatever their destination; else to outside P.
    const at = point(p);
    const translated = nat.translate ? nat.translate.some((f) => contains(f.match, at)) : !hides(nat.hidden, p.dst);
    if (hides(nat.hidden, p.src) && translated) return { kind: 'on', packet: { ...p, src: nat.addr } };
    return { kind: 'on', packet: p };
  }
  if (p.dst === net.addr[k]) return { kind: 'delivered' };
  const fw = rules ? net.firewalls.get(k) : undefined;
  if (fw) {
    const at = point(p);
    const rule = fw.rules.find((r) => contains(r.box, at) && !r.except.some((x) => contains(x, at)));
    if (!(rule ? rule.allow : fw.allow)) return { kind: 'dropped' };
  }
  return { kind: 'on', packet: p };
}

/** Whether the model lets the packets through on a path: some of them, or every one (`all`). */
export function passesOn(net: Net, path: number[], packets: Packet[], dst: string, all: boolean): Packet | undefined {
  let first: Packet | undefined;
  for (const start of packets) {
    let p: Packet | undefined = start;
    for (const k of path.slice(1, -1)) {
      const step = passNode(net, k, p, dst, true);
      if (step.kind !== 'on') {
        p = undefined;
        break;
      }
      p = step.packet;
    }
    const arrived = p !== undefined && p.dst === dst;
    if (arrived && !all) return start;
    if (!arrived && all) return undefined;
    first ??= start;
  }
  return all ? first : undefined;
}

/**
 * The packets to try for a requirement (its box, addressed to `targets`): one per class its range is cut into by
 * the rules that may see it (those whose addresses hold one of `sources` and `targets`' translations) and by the
 * forward tables' entries, the source port 40000 where its class holds it. At most WITNESS_PACKETS, spread evenly.
 */
export function candidatePackets(
  net: Net,
  box: Box,
  src: string,
  { sources, targets }: { sources: string[]; targets: string[] },
): Packet[] {
  const addressBox = (s: string, d: string) => point({ src: s, dst: d, proto: 0, sport: 0, dport: 0 }).slice(0, 16);
  const pairs = sources.flatMap((s) => targets.map((d) => addressBox(s, d)));
  const meets = (b: Box) => pairs.some((a) => a.every((v, i) => (i % 2 ? v <= b[i]! : v >= b[i]!)));
  const boxes: Box[] = [];
  for (const fw of net.firewalls.values())
    for (const r of fw.rules) if (meets(r.box)) boxes.push(r.box, ...r.except.filter(meets));
  for (const nat of net.nats.values()) for (const f of nat.forward ?? []) boxes.push(f.match);
  const out: Packet[] = [];
  for (let proto = box[2 * PROTO]!; proto <= box[2 * PROTO + 1]!; proto++) {
    const these = boxes.filter((b) => b[2 * PROTO]! <= proto && proto <= b[2 * PROTO + 1]!);
    const reps = (dim: number, prefer?: number) => {
      const [lo, hi] = [box[2 * dim]!, box[2 * dim + 1]!];
      const cuts = [...new Set([lo, hi + 1, ...these.flatMap((b) => [b[2 * dim]!, b[2 * dim + 1]! + 1])])]
        .filter((v) => v >= lo && v <= hi + 1)
        .sort((x, y) => x - y);
      return cuts.slice(0, -1).flatMap((a, i) => {
        const b = cuts[i + 1]! - 1;
        if (prefer !== undefined && a <= prefer && prefer <= b) return [prefer];
        // Port 0 cannot be bound or connected to: its class is tried at 1 when it holds 1.
        return a > 0 ? [a] : b >= 1 ? [1] : [];
      });
    };
    const ported = proto < 2;
    const sports = ported ? reps(SPORT, 40000) : [0];
    const dports = ported ? reps(DPORT) : [0];
    for (const target of targets)
      for (const dport of dports) for (const sport of sports) out.push({ src, dst: target, proto, sport, dport });
  }
  if (out.length <= WITNESS_PACKETS) return out;
  return [
    ...new Set(Array.from({ length: WITNESS_PACKETS }, (_, k) => out[Math.floor((k * out.length) / WITNESS_PACKETS)]!)),
  ];
}

/**
 * The shortest walk from s to d on which the model lets some packet through (every packet together with `all`),
 * searched breadth first over states (a node and the headers there): a simple path, or undefined when there is
 * none, when the shortest is not simple (a NAT on a cycle), or after WITNESS_STEPS states (`stopped`).
 */
export function searchWitness(
  net: Net,
  s: number,
  d: number,
  packets: Packet[],
  dst: string,
  all: boolean,
): { path?: number[]; packet?: Packet; stopped: boolean; steps: number } {
  const starts = all ? [packets] : packets.map((p) => [p]);
  const key = (k: number, ps: Packet[]) =>
    `${k}|${ps.map((p) => `${p.src} ${p.dst} ${p.proto} ${p.sport} ${p.dport}`).join('|')}`;
  const seen = new Set<string>();
  const queue: { node: number; packets: Packet[]; parent: number; start: number }[] = [];
  starts.forEach((ps, i) => {
    const k = key(s, ps);
    if (seen.has(k)) return;
    seen.add(k);
    queue.push({ node: s, packets: ps, parent: -1, start: i });
  });
  for (let head = 0; head < queue.length; head++) {
    if (head >= WITNESS_STEPS) return { stopped: true, steps: head };
    const item = queue[head]!;
    for (const v of net.next[item.node]!) {
      if (v === s) continue;
      if (v === d) {
        if (!item.packets.every((p) => p.dst === dst)) continue;
        const path = [d];
        for (let at = head; at >= 0; at = queue[at]!.parent) path.push(queue[at]!.node);
        path.reverse();
        const simple = new Set(path).size === path.length;
        return simple
          ? { path, packet: starts[item.start]![0], stopped: false, steps: head }
          : { stopped: false, steps: head };
      }
      if (!net.transit(v)) continue;
      const after: Packet[] = [];
      for (const p of item.packets) {
        const step = passNode(net, v, p, dst, true);
        if (step.kind === 'on') after.push(step.packet);
      }
      if (after.length < item.packets.length) continue;
      const k = key(v, after);
      if (seen.has(k)) continue;
      seen.add(k);
      queue.push({ node: v, packets: after, parent: head, start: item.start });
    }
  }
  return { stopped: false, steps: queue.length };
}

/** The addresses a requirement's packets may carry: sources as NATs hide them, destinations as NATs lead to them. */
export function addressesSeen(net: Net, src: string, dst: string): { sources: string[]; targets: string[] } {
  const sources = [src];
  const targets = [dst];
  for (const nat of net.nats.values()) {
    if (hides(nat.hidden, src)) sources.push(nat.addr);
    if (hides(nat.hidden, src) || nat.addr === dst) continue;
    const leads = nat.forward ? nat.forward.some((f) => f.to === dst) : hides(nat.hidden, dst);
    if (leads) targets.push(nat.addr);
  }
  return { sources, targets };
}
