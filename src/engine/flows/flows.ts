/**
 * Flows: what traffic of each requirement reaches which node, split into atomic classes (engine.md 2.8, B 2.5).
 *
 * Traffic is propagated as exact regions (unions of boxes): a NAT hides private sources behind its address and
 * turns traffic addressed to it back towards its private networks (B 2.6.2); traffic addressed to an intermediate
 * node is delivered there and leaves the flow (B 2.5). All regions seen anywhere become predicates of one
 * partition, refined by the rules of configured firewalls, so that each class is wholly allowed or wholly denied by
 * every firewall.
 *
 * Most requirements are decided without listing paths (issue 26, docs/ARCHITECTURE.md): their traffic moves over a
 * state graph of (node, class) pairs inside the requirement's corridor of blocks. Inside a block nodes only pass or
 * drop a class, so a walk that lets a class through contains a simple path that does too; a NAT at a cut vertex acts
 * once on every path, as on the walk. Where that argument fails (a NAT inside a block, two NATs on the way, complete
 * reachability through a NAT or a node addressed by its traffic) the simple paths are listed instead and each becomes
 * atomic flows: the sequences of classes a set of packets has at the firewalls and allocation places of a path.
 */
import type { Property } from '../../model/types.js';
import { corridorNext, type Corridor, type NetNode } from './network.js';
import { refineForRules } from '../rules/rule-model.js';
import {
  DPORT,
  DST,
  Partition,
  SRC,
  UNIVERSE,
  boxOf,
  intersect,
  regionIntersect,
  regionIntersects,
  regionSubtract,
  rewrite,
  type Box,
  type PacketClass,
  exceptBoxes,
  ruleBoxes,
} from '../../model/space.js';

export type RequirementKind = 'isolation' | 'reachability' | 'complete';

export interface Requirement {
  /** Position in the output property list. */
  index: number;
  property: Property;
  kind: RequirementKind;
  src: number;
  dst: number;
  /** The blocks its traffic may cross (a forwarding path is one block per link). */
  corridor: Corridor;
  /** Its only path is one the input fixes (a forwarding path). */
  fixed?: boolean;
  /** Simple paths, listed only where walks and simple paths may differ, or the one a forwarding path fixes. */
  paths?: number[][];
}

/** A decision point of a flow: a firewall or allocation place, and the class the packets have there. */
export interface Hop {
  node: number;
  cls: number;
}

export interface AtomicFlow {
  requirement: number;
  path: number;
  hops: Hop[];
}

/**
 * A requirement's traffic without paths: state k is node[k] reached by the classes classes[k] (one class, or for
 * complete reachability all of the requirement's traffic); to[first[k]] up to to[first[k + 1] - 1] are the states
 * it leads to when the node lets them pass. Only states from which an arrival can be reached are kept. States of one
 * strongly connected component of more than one state (component[k]) lie on a cycle: a witness through them needs
 * ranks (allocate.ts).
 */
export interface StateGraph {
  node: number[];
  classes: number[][];
  /**
   * The links, all in two typed arrays (first has one more entry than there are states): an array per state was a
   * million arrays on wan-750 of bench:wan, and its collection a third of the CPU time.
   */
  first: Int32Array;
  to: Int32Array;
  start: number[];
  arrive: number[];
  /** Each state's strongly connected component, and each component's size (typed: a million states on wan-750). */
  component: Int32Array;
  componentSize: Int32Array;
}

export interface FlowModel {
  classes: PacketClass[];
  /** Atomic flows per requirement, per listed path; empty for a requirement decided without paths. */
  flows: AtomicFlow[][][];
  /** The state graph of each requirement decided without paths. */
  graphs: (StateGraph | undefined)[];
  /**
   * No rule a synthesised firewall could have, nor one inserted into a deployed firewall, cuts a class
   * (rule-model.ts's refineForRules splits none): only then are lists of rules taking whole classes every list, and
   * the rule count (or a reconfiguration's change count) provable.
   */
  cutFree: boolean;
  /**
   * The model on classes refined so that no such rule cuts one (rule-model.ts, `refineForRules`): this one where
   * cutFree, else built on first call.
   */
  refined(): FlowModel;
}

const ANY_ADDRESS = [0, 255, 0, 255, 0, 255, 0, 255];

/** All packets whose source (at = SRC) or destination (at = DST) address lies in the given octet bounds. */
const addressBox = (bounds: number[], at: number): Box => rewrite(UNIVERSE, at, bounds);

/**
 * Whether a box meets addressBox(bounds, at), no box made: asked of every addressed node of a requirement's corridor
 * (wan-750: 800 corridors of 1,250 nodes, each named by its address), of which almost none meet.
 */
function meetsAddress(box: Box, bounds: readonly number[], at: number): boolean {
  for (let i = 0; i < bounds.length; i += 2)
    if (box[2 * at + i]! > bounds[i + 1]! || bounds[i]! > box[2 * at + i + 1]!) return false;
  return true;
}

const portAt = (port: number) => [port, port];

/** What happens to a region of packets as it passes an intermediate node. */
function passNode(n: NetNode, region: Box[]): Box[] {
  if (n.role === 'nat' && n.address) {
    const natAddr = n.address;
    const toNat = addressBox(natAddr, DST);
    let privateSrc: Box[] = [];
    let privateDst: Box[] = [];
    for (const p of n.natSources ?? []) {
      privateSrc = [...regionSubtract(privateSrc, addressBox(p, SRC)), addressBox(p, SRC)];
      privateDst = [...regionSubtract(privateDst, addressBox(p, DST)), addressBox(p, DST)];
    }
    // The entries of a translation by destination as disjoint boxes, so that no packet is translated twice.
    let translates: Box[] | undefined;
    if (n.natTranslates) translates = n.natTranslates.reduce<Box[]>((all, t) => [...regionSubtract(all, t), t], []);
    const out: Box[] = [];
    // A forward table: the first entry a packet matches (protocol, ports, its source and destination) sends it to
    // its host (and port); what no entry takes goes on (addressed to the NAT: delivered there).
    const forward = (region: Box[]): Box[] => {
      let left = region;
      for (const f of n.natForwards ?? []) {
        for (const b of regionIntersect(left, f.match))
          out.push(
            f.toPort === undefined ? rewrite(b, DST, f.to) : rewrite(rewrite(b, DST, f.to), DPORT, portAt(f.toPort)),
          );
        left = regionSubtract(left, f.match);
      }
      return left;
    };
    for (const box of region) {
      // Addressed to the NAT from outside: turned back towards each private network. From inside: delivered.
      const inbound = intersect(box, toNat);
      if (inbound) {
        let outside = regionSubtract([inbound], addressBox(natAddr, SRC));
        for (const p of privateSrc) outside = regionSubtract(outside, p);
        if (!n.natForwards) for (const b of outside) for (const p of n.natSources ?? []) out.push(rewrite(b, DST, p));
        else forward(outside);
      }
      for (const rest of regionSubtract([box], toNat)) {
        // From a private source: to a public destination the source becomes the NAT's address; private to private is
        // unchanged.
        for (const p of privateSrc) {
          for (const b of regionIntersect([rest], p)) {
            if (translates) {
              // Translating by destination: the entries' packets become the NAT's, whatever their destination.
              let kept = [b];
              for (const t of translates) {
                for (const o of regionIntersect([b], t)) out.push(rewrite(o, SRC, natAddr));
                kept = regionSubtract(kept, t);
              }
              out.push(...kept);
              continue;
            }
            let outward = [b];
            for (const q of privateDst) outward = regionSubtract(outward, q);
            for (const o of outward) out.push(rewrite(o, SRC, natAddr));
            for (const q of privateDst) out.push(...regionIntersect([b], q));
          }
        }
        let publicSource = [rest];
        for (const p of privateSrc) publicSource = regionSubtract(publicSource, p);
        if (!n.natForwards) out.push(...publicSource);
        else {
          // Entries for other destinations than the NAT (a DNAT line without -d) take packets from outside too.
          const fromNat = regionIntersect(publicSource, addressBox(natAddr, SRC));
          out.push(...fromNat, ...forward(regionSubtract(publicSource, addressBox(natAddr, SRC))));
        }
      }
    }
    return out;
  }
  return n.address ? regionSubtract(region, addressBox(n.address, DST)) : region;
}

export const isDecision = (n: NetNode) => n.role === 'place' || n.role === 'firewall';

/** The nodes between a requirement's ends that its traffic may cross: on its listed paths, or in its corridor. */
export function intermediates(r: Omit<Requirement, 'paths'> & { paths?: number[][] }): readonly number[] {
  // Asked several times per requirement (its region, NATs, rules met, nodes on its way): worked out once, for the
  // paths or corridor it was asked of.
  const key = r.paths ?? r.corridor;
  const known = inner.get(key);
  if (known) return known;
  const out = r.paths
    ? sortedUnique(r.paths.map((path) => path.slice(1, -1)))
    : sortedUnique(r.corridor.blocks, r.src, r.dst);
  inner.set(key, out);
  return out;
}

const inner = new WeakMap<object, readonly number[]>();

/**
 * The numbers of the lists (node indexes), each once, in increasing order, but for the `left` ones: marked in an
 * array, not sorted by a comparator nor gathered in a set (wan-750: 800 corridors of 1,250 nodes, 1 M states).
 */
function sortedUnique(lists: readonly (readonly number[])[], ...left: number[]): number[] {
  // By index: each step of a for-of, before V8 optimises this, allocated its iterator's result.
  let most = -1;
  for (let i = 0; i < lists.length; i++)
    for (let j = 0; j < lists[i]!.length; j++) most = Math.max(most, lists[i]![j]!);
  const mark = new Uint8Array(most + 1);
  for (let i = 0; i < lists.length; i++) for (let j = 0; j < lists[i]!.length; j++) mark[lists[i]![j]!] = 1;
  for (const k of left) if (k >= 0 && k <= most) mark[k] = 0;
  const out: number[] = [];
  for (let k = 0; k <= most; k++) if (mark[k]) out.push(k);
  return out;
}

const baseBox = (p: Property) =>
  boxOf({ src: p.src, dst: p.dst, srcPort: p.srcPort, dstPort: p.dstPort, proto: p.lv4Proto });

/** The packets a requirement may send: its source, ports and protocol, to its destination or to a NAT on its way. */
function initialRegion(net: NetNode[], r: Requirement): Box[] {
  const base = baseBox(r.property);
  const nats = intermediates(r).filter((k) => net[k]!.role === 'nat');
  return [base, ...nats.map((k) => rewrite(base, DST, net[k]!.address ?? ANY_ADDRESS))];
}

/** A node of `inner` (by default the requirement's corridor but its ends) that its own traffic addresses, if any. */
export function addressedOnWay(
  net: NetNode[],
  r: Omit<Requirement, 'paths'>,
  inner = r.corridor.blocks.flat().filter((k) => k !== r.src && k !== r.dst),
): number | undefined {
  const base = baseBox(r.property);
  return inner.find((k) => net[k]!.address && meetsAddress(base, net[k]!.address!, DST));
}

/**
 * Why a requirement's simple paths must be listed (walks could differ from them), or undefined when its state graph
 * decides it exactly: no NAT on its way, or one NAT at a cut vertex of its corridor (it acts once on every path and
 * on every walk) for isolation and reachability. Complete reachability needs one open traffic on every path: no NAT
 * and no intermediate node addressed by its traffic.
 */
export function pathsNeeded(net: NetNode[], r: Omit<Requirement, 'paths'>): string | undefined {
  // The first two NATs on its way are all that is said: no list of the corridor's nodes is built.
  const nats: number[] = [];
  for (const block of r.corridor.blocks) {
    for (const k of block) if (net[k]!.role === 'nat' && k !== r.src && k !== r.dst && !nats.includes(k)) nats.push(k);
    if (nats.length > 1) break;
  }
  if (r.kind === 'complete') {
    const inner = r.corridor.blocks.flat().filter((k) => k !== r.src && k !== r.dst);
    if (nats.length) return `complete reachability through the NAT ${net[nats[0]!]!.name}`;
    const addressed = addressedOnWay(net, r, inner);
    return addressed === undefined
      ? undefined
      : `complete reachability through ${net[addressed]!.name}, addressed by it`;
  }
  if (nats.length > 1) return `the NATs ${net[nats[0]!]!.name} and ${net[nats[1]!]!.name} on its way`;
  if (nats.length === 1 && !r.corridor.joints.includes(nats[0]!))
    return `the NAT ${net[nats[0]!]!.name} on a cycle of its way`;
  return undefined;
}

/**
 * Predicates of a requirement decided without paths: its traffic before and after its NAT, each split where a node
 * on that side of the NAT (or dst) is addressed by it, so that a class is delivered there whole or not at all.
 */
function graphPredicates(net: NetNode[], r: Requirement, partition: Partition): { before: number[]; after: number[] } {
  const before = initialRegion(net, r);
  const nat = r.corridor.joints.findIndex((k) => net[k]!.role === 'nat');
  const after = nat < 0 ? [] : passNode(net[r.corridor.joints[nat]!]!, before);
  // Only the nodes whose address the region meets split it: the others' cuts are empty. By index, no closure per
  // node: this runs once per corridor node, mostly before V8 optimises it.
  const addressed = (blocks: number[][], region: Box[]) => {
    const seen = new Set<number>();
    for (const block of blocks) {
      const nodes = addressedIn(net, block);
      for (let i = 0; i < nodes.length; i++) {
        const k = nodes[i]!;
        if (k === r.src || seen.has(k)) continue;
        for (let j = 0; j < region.length; j++)
          if (meetsAddress(region[j]!, net[k]!.address!, DST)) {
            seen.add(k);
            break;
          }
      }
    }
    return [...seen].map((k) => addressBox(net[k]!.address!, DST));
  };
  const add = (region: Box[], cuts: Box[]) => {
    const ids = region.map((b) => partition.add(b, true));
    for (const b of region)
      for (const c of cuts) {
        const part = intersect(b, c);
        if (part) partition.add(part, true);
      }
    return ids;
  };
  // The NAT is joint j: blocks before it hold the traffic as sent, blocks after it the traffic it sends on.
  const blocks = r.corridor.blocks;
  if (nat < 0) return { before: add(before, addressed(blocks, before)), after: [] };
  // A forward table splits what comes to the NAT by its entries: each class goes to one entry's host, or to none.
  const natNode = net[r.corridor.joints[nat]!]!;
  // Each entry's packets name its source and destination (the NAT's address unless it names another).
  // A translation by destination splits what leaves the NAT's hidden side the same way: translated whole or not.
  const forwards = [...(natNode.natForwards ?? []).map((f) => f.match), ...(natNode.natTranslates ?? [])];
  return {
    before: add(before, [...addressed(blocks.slice(0, nat), before), ...forwards]),
    after: add(after, addressed(blocks.slice(nat), after)),
  };
}

/**
 * A block's nodes other than NATs that have an address, in its order: found once per block array (corridors()
 * shares them), not once per requirement crossing it.
 */
function addressedIn(net: NetNode[], block: readonly number[]): readonly number[] {
  const known = addressedKnown.get(block);
  if (known && known.net === net) return known.nodes;
  const nodes = block.filter((k) => net[k]!.role !== 'nat' && net[k]!.address);
  addressedKnown.set(block, { net, nodes });
  return nodes;
}

const addressedKnown = new WeakMap<readonly number[], { net: NetNode[]; nodes: readonly number[] }>();

/** Strongly connected components of a graph (Tarjan, iterative). */
function stronglyConnected(first: Int32Array, to: Int32Array): Int32Array {
  const count = first.length - 1;
  const index = new Int32Array(count).fill(-1);
  const low = new Int32Array(count);
  const onStack = new Uint8Array(count);
  const component = new Int32Array(count).fill(-1);
  const stack = new Int32Array(count);
  let stacked = 0;
  // The depth-first frames: a state and the position of the next link to look at, in typed arrays.
  const frameState = new Int32Array(count);
  const frameAt = new Int32Array(count);
  let time = 0;
  let components = 0;
  for (let root = 0; root < count; root++) {
    if (index[root] !== -1) continue;
    let depth = 0;
    frameState[0] = root;
    frameAt[0] = first[root]!;
    index[root] = low[root] = time++;
    stack[stacked++] = root;
    onStack[root] = 1;
    while (depth >= 0) {
      const v = frameState[depth]!;
      if (frameAt[depth]! < first[v + 1]!) {
        const w = to[frameAt[depth]!++]!;
        if (index[w] === -1) {
          index[w] = low[w] = time++;
          stack[stacked++] = w;
          onStack[w] = 1;
          depth++;
          frameState[depth] = w;
          frameAt[depth] = first[w]!;
        } else if (onStack[w]) low[v] = Math.min(low[v]!, index[w]!);
        continue;
      }
      depth--;
      if (depth >= 0) low[frameState[depth]!] = Math.min(low[frameState[depth]!]!, low[v]!);
      if (low[v] === index[v]) {
        for (;;) {
          const w = stack[--stacked]!;
          onStack[w] = 0;
          component[w] = components;
          if (w === v) break;
        }
        components++;
      }
    }
  }
  return component;
}

/**
 * stateGraph's links as found, kept between calls and grown as needed (to the most links of one requirement's
 * graph): as arrays of numbers, grown by copying, they were young garbage on wan-750's million states.
 */
const linkBuffers = { from: new Int32Array(1024), to: new Int32Array(4096) };

const grown = (a: Int32Array) => {
  const out = new Int32Array(2 * a.length);
  out.set(a);
  return out;
};

/** The state graph of a requirement decided without paths (see StateGraph). */
function stateGraph(
  net: NetNode[],
  r: Requirement,
  classes: PacketClass[],
  classesOf: (predicates: number[]) => PacketClass[],
  predicates: { before: number[]; after: number[] },
): StateGraph {
  const nextOf = corridorNext(net, r.corridor);
  const starting = classesOf(predicates.before).map((c) => c.id);
  const afterNat = classesOf(predicates.after);
  const node: number[] = [];
  const held: number[][] = [];
  // The links of state k, as found: edgeTo[edgeFrom[k]] up to edgeTo[edgeFrom[k + 1] - 1] (states are looked at in
  // order, each adding its links at the end), in the typed buffers kept between calls.
  let edges = 0;
  const link = (m: number) => {
    if (edges === linkBuffers.to.length) linkBuffers.to = grown(linkBuffers.to);
    linkBuffers.to[edges++] = m;
  };
  // A state holding one class (all but complete reachability's) is found by its node and class in an open-addressed
  // table of state numbers (-1: empty), not a Map: wan-750's million states made a Map's entries a fifth of this
  // function's time and much of the solver thread's young garbage. Complete reachability's by text. It starts small,
  // so that the tests' graphs grow it and probe past taken slots (test/engine/pathfree.test.ts fails on a wrong probe).
  let table = new Int32Array(64).fill(-1);
  const slot = (n: number, c: number) => {
    const mask = table.length - 1;
    let i = (Math.imul(n, 0x9e3779b1) ^ Math.imul(c, 0x85ebca6b)) & mask;
    for (let k = table[i]!; k >= 0 && (node[k] !== n || held[k]![0] !== c); k = table[i]!) i = (i + 1) & mask;
    return i;
  };
  const keyed = new Map<string, number>();
  const state = (n: number, cls: number[]): number => {
    if (cls.length === 1) {
      const i = slot(n, cls[0]!);
      if (table[i]! >= 0) return table[i]!;
      table[i] = node.length;
    } else {
      const key = `${n}:${cls.join(',')}`;
      const known = keyed.get(key);
      if (known !== undefined) return known;
      keyed.set(key, node.length);
    }
    node.push(n);
    held.push(cls);
    // Kept at most half full: past that the table doubles, every one-class state in it again.
    if (2 * node.length > table.length) {
      table = new Int32Array(2 * table.length).fill(-1);
      for (let j = 0; j < node.length; j++) if (held[j]!.length === 1) table[slot(node[j]!, held[j]![0]!)] = j;
    }
    return node.length - 1;
  };
  /** The classes a NAT sends on of the class that reaches it: each goes on as one state. */
  const throughNat = (n: number, cls: number): number[][] => {
    const image = passNode(net[n]!, classes[cls]!.boxes);
    return afterNat.filter((d) => d.boxes.some((b) => regionIntersects(image, b))).map((d) => [d.id]);
  };
  const arrive = new Set<number>();
  const start: number[] = [];
  const initial = r.kind === 'complete' ? [starting] : starting.map((c) => [c]);
  for (const n of nextOf(r.src)) for (const cls of initial) start.push(state(n, cls));
  for (let k = 0; k < node.length; k++) {
    const n = node[k]!;
    if (k + 1 >= linkBuffers.from.length) linkBuffers.from = grown(linkBuffers.from);
    linkBuffers.from[k] = edges;
    if (n === r.dst) {
      if (r.kind === 'complete' || meetsAddress(classes[held[k]![0]!]!.boxes[0]!, net[r.dst]!.address!, DST))
        arrive.add(k);
      continue;
    }
    const out = nextOf(n);
    const cls = held[k]!;
    const at = net[n]!;
    // Complete reachability's classes go on together. Any other state's one class goes on as it is, but at a NAT,
    // which rewrites it, and at a node its class is addressed to, which takes it.
    if (r.kind === 'complete') for (const m of out) link(state(m, cls));
    else if (at.role === 'nat') for (const each of throughNat(n, cls[0]!)) for (const m of out) link(state(m, each));
    else if (!at.address || !meetsAddress(classes[cls[0]!]!.boxes[0]!, at.address, DST))
      for (const m of out) link(state(m, cls));
  }
  const { from: edgeFrom, to: edgeTo } = linkBuffers;
  edgeFrom[node.length] = edges;
  // Keep the states from which an arrival can be reached. The links backwards in two typed arrays, and the kept
  // links deduplicated by a stamp per state, not an array or a set per state: young-generation collection was a
  // third of wan-750's profile.
  const count = node.length;
  const backStart = new Int32Array(count + 1);
  for (let e = 0; e < edges; e++) backStart[edgeTo[e]! + 1]!++;
  for (let k = 0; k < count; k++) backStart[k + 1]! += backStart[k]!;
  const backFill = backStart.slice(0, count);
  const back = new Int32Array(backStart[count]!);
  for (let k = 0; k < count; k++)
    for (let e = edgeFrom[k]!; e < edgeFrom[k + 1]!; e++) back[backFill[edgeTo[e]!]!++] = k;
  const useful = new Uint8Array(count);
  const queue = [...arrive];
  for (const k of queue) useful[k] = 1;
  for (let h = 0; h < queue.length; h++)
    for (let e = backStart[queue[h]!]!; e < backStart[queue[h]! + 1]!; e++) {
      const p = back[e]!;
      if (useful[p]) continue;
      useful[p] = 1;
      queue.push(p);
    }
  const renumber = new Int32Array(count).fill(-1);
  let kept = 0;
  for (let k = 0; k < count; k++) if (useful[k]) renumber[k] = kept++;
  const keep = <T>(xs: T[]) => xs.filter((_, k) => useful[k]);
  const stamp = new Int32Array(kept).fill(-1);
  const first = new Int32Array(kept + 1);
  const links = new Int32Array(edges);
  let linked = 0;
  for (let k = 0; k < count; k++) {
    if (!useful[k]) continue;
    first[renumber[k]!] = linked;
    for (let e = edgeFrom[k]!; e < edgeFrom[k + 1]!; e++) {
      const to = renumber[edgeTo[e]!]!;
      if (to < 0 || stamp[to] === k) continue;
      stamp[to] = k;
      links[linked++] = to;
    }
  }
  first[kept] = linked;
  const to = links.slice(0, linked);
  const component = stronglyConnected(first, to);
  const componentSize = new Int32Array(kept);
  for (const c of component) componentSize[c]!++;
  return {
    node: keep(node),
    classes: keep(held),
    first,
    to,
    start: [...new Set(start.filter((k) => useful[k]).map((k) => renumber[k]!))],
    arrive: [...arrive].filter((k) => useful[k]).map((k) => renumber[k]!),
    component,
    componentSize,
  };
}

/** The address regions the network names: nodes' addresses and the private networks NATs hide. */
function namedAddresses(net: NetNode[]): number[][] {
  const named = new Map<string, number[]>();
  for (const n of net) for (const a of [n.address, ...(n.natSources ?? [])]) if (a) named.set(a.join(','), a);
  return [...named.values()];
}

/**
 * The packet classes and flows of the requirements; `refined()` gives them on classes refined so that no rule a
 * synthesised firewall could have cuts one, for a rule count proven among every list, and `cutFree` tells whether
 * the classes already are so.
 */
export function computeFlows(net: NetNode[], requirements: Requirement[]): FlowModel {
  const partition = partitioned(net, requirements);
  const { coarse, fine, hopPredicates, graphPreds } = partition;
  const cutFree = fine.length === coarse.length;
  // The refined model is built when asked for, from the partition kept if its classes are few (a graph refined
  // first is small), else from the partition computed again: a large network's refined classes are not kept
  // through its coarse solve, and only a graph proven on its coarse classes, or small, is ever refined.
  const kept = fine.length <= KEPT_REFINED_CLASSES ? partition : undefined;
  let refined: FlowModel | undefined;
  const model: FlowModel = {
    ...flowsOn(net, requirements, coarse, hopPredicates, graphPreds),
    cutFree,
    refined: () => (refined ??= cutFree ? model : refinedFlows(net, requirements, kept)),
  };
  return model;
}

/**
 * Refined classes up to which computeFlows keeps its partition for the refined model: computing it again was a
 * third of Test5_4's refined flows (850 classes). A 1,200-node NAT network has 12,979: kept through its coarse
 * solve, they raised its peak memory.
 */
const KEPT_REFINED_CLASSES = 2_000;

function refinedFlows(
  net: NetNode[],
  requirements: Requirement[],
  { fine, hopPredicates, graphPreds } = partitioned(net, requirements),
): FlowModel {
  const model: FlowModel = {
    ...flowsOn(net, requirements, fine, hopPredicates, graphPreds),
    cutFree: true,
    refined: () => model,
  };
  return model;
}

/**
 * The partition of the requirements' traffic: its classes, coarse and refined for rules, and the predicates of each
 * listed path's hops and of each state graph.
 */
function partitioned(net: NetNode[], requirements: Requirement[]) {
  const partition = new Partition();
  // Regions along every listed path, as predicates; remember which predicates each hop's packets lie in.
  const hopPredicates: number[][][][] = requirements.map((r) =>
    (r.paths ?? []).map((path) => {
      let region = initialRegion(net, r);
      const perHop: number[][] = [region.map((b) => partition.add(b, true))];
      for (let i = 1; i < path.length; i++) {
        if (i < path.length - 1) region = passNode(net[path[i]!]!, region);
        else region = regionIntersect(region, addressBox(net[r.dst]!.address!, DST));
        perHop.push(region.map((b) => partition.add(b, true)));
      }
      return perHop;
    }),
  );
  const graphPreds = requirements.map((r) => (r.paths ? undefined : graphPredicates(net, r, partition)));
  // Rules of configured firewalls the traffic may meet split the classes further.
  const met = new Set<number>();
  for (const r of requirements) for (const k of intermediates(r)) met.add(k);
  for (const k of [...met].sort((a, b) => a - b)) {
    for (const rule of net[k]!.rules ?? []) {
      for (const box of ruleBoxes(rule)) partition.add(box, false);
      // A rule matches a class whole or not at all only if its except boxes split the classes too.
      for (const box of exceptBoxes(rule)) partition.add(box, false);
    }
  }
  const coarse = partition.classes();
  // A deployed firewall's inserted rules are candidates too (allocate.ts): a one-rule fix that would cut a coarse
  // class (ALLOW TCP 22 of a class of every port) is then a rule taking whole refined classes.
  if ([...met].some((k) => net[k]!.configurable || net[k]!.deployed)) refineForRules(partition, namedAddresses(net));
  return { coarse, fine: partition.classes(), hopPredicates, graphPreds };
}

/** The flows and state graphs of the requirements over given classes of the partition their predicates are in. */
function flowsOn(
  net: NetNode[],
  requirements: Requirement[],
  classes: PacketClass[],
  hopPredicates: number[][][][],
  graphPreds: (ReturnType<typeof graphPredicates> | undefined)[],
): Pick<FlowModel, 'classes' | 'flows' | 'graphs'> {
  const byPredicate = new Map<number, PacketClass[]>();
  for (const c of classes) for (const m of c.members) (byPredicate.get(m) ?? byPredicate.set(m, []).get(m)!).push(c);
  const classesOf = (predicates: number[]) => {
    const seen = new Set<PacketClass>();
    for (const p of predicates) for (const c of byPredicate.get(p) ?? []) seen.add(c);
    return [...seen].sort((a, b) => a.id - b.id);
  };

  const flows = requirements.map((r, ri) =>
    (r.paths ?? []).map((path, pi) => {
      const preds = hopPredicates[ri]![pi]!;
      const flow = (hops: Hop[]): AtomicFlow => ({ requirement: ri, path: pi, hops });
      const found = new Map<string, AtomicFlow>();
      const add = (hops: Hop[]) => {
        const key = hops.map((h) => `${h.node}:${h.cls}`).join(' ');
        if (!found.has(key)) found.set(key, flow(hops));
      };
      if (path.every((k) => net[k]!.role !== 'nat')) {
        // Without a NAT a class's packets keep their class all the way, and each hop's region is a union of
        // predicates: a class starting out arrives, as a whole, iff every hop's region holds it.
        // Each class's hops are its own (their class is its id), so no text is needed to tell them apart: only
        // without a decision hop is every class's flow the same, empty one, kept once. By index: this runs once per
        // class and path, mostly before V8 optimises it.
        const decisions = path.slice(1, -1).filter((k) => isDecision(net[k]!));
        const starting = classesOf(preds[0]!);
        const arriving: AtomicFlow[] = [];
        for (let j = 0; j < starting.length && (decisions.length > 0 || arriving.length === 0); j++) {
          const c = starting[j]!;
          let all = true;
          for (let h = 0; h < preds.length && all; h++) {
            const p = preds[h]!;
            let some = false;
            for (let i = 0; i < p.length && !some; i++) some = c.members.has(p[i]!);
            all = some;
          }
          if (all) arriving.push(flow(decisions.map((k) => ({ node: net[k]!.index, cls: c.id }))));
        }
        return arriving;
      }
      // Through a NAT, regions are followed: each decision hop splits them by the classes they meet.
      const hopClasses: PacketClass[][] = [];
      // `own`: the class the region lies in until a NAT rewrites it (other nodes only take the packets addressed to
      // them); classes are disjoint, so no other class meets it there, and no intersection need say so.
      const walk = (i: number, region: Box[], hops: Hop[], own?: PacketClass) => {
        if (region.length === 0) return;
        if (i === path.length - 1) {
          if (regionIntersect(region, addressBox(net[r.dst]!.address!, DST)).length) add(hops);
          return;
        }
        const node = net[path[i]!]!;
        const passed = passNode(node, region);
        const still = node.role === 'nat' ? undefined : own;
        if (!isDecision(node)) return walk(i + 1, passed, hops, still);
        const classes = (hopClasses[i] ??= classesOf(preds[i]!));
        if (still) {
          if (classes.includes(still)) walk(i + 1, passed, [...hops, { node: node.index, cls: still.id }], still);
          return;
        }
        for (const c of classes) {
          const part = c.boxes.flatMap((b) => regionIntersect(passed, b));
          if (part.length) walk(i + 1, part, [...hops, { node: node.index, cls: c.id }]);
        }
      };
      for (const c of classesOf(preds[0]!)) walk(1, c.boxes, [], c);
      return [...found.values()];
    }),
  );
  const graphs = requirements.map((r, ri) =>
    graphPreds[ri] ? stateGraph(net, r, classes, classesOf, graphPreds[ri]) : undefined,
  );
  return { classes, flows, graphs };
}

/**
 * The nodes between a requirement's ends that an answer decides about: on its listed paths, or reached by its state
 * graph (a corridor node only an undirected link joins is on no directed path).
 */
export function nodesOnWay(model: FlowModel, r: Requirement): readonly number[] {
  const graph = model.graphs[r.index];
  if (!graph) return intermediates(r);
  // Asked by the graph's work, its written result and its fast answers: worked out once per state graph.
  const known = onWay.get(graph);
  if (known) return known;
  const out = nodesReached(model, r.index).filter((k) => k !== r.src && k !== r.dst);
  onWay.set(graph, out);
  return out;
}

const onWay = new WeakMap<StateGraph, readonly number[]>();

/** The nodes a requirement's decided traffic reaches (its states, or the hops of its atomic flows). */
export function nodesReached(model: FlowModel, r: number): readonly number[] {
  // Asked by every fast answer of its component (allocate.ts): worked out once per state graph or list of flows.
  const key = model.graphs[r] ?? model.flows[r]!;
  const known = reached.get(key);
  if (known) return known;
  const graph = model.graphs[r];
  const out = sortedUnique(graph ? [graph.node] : model.flows[r]!.flat().map((f) => f.hops.map((h) => h.node)));
  reached.set(key, out);
  return out;
}

const reached = new WeakMap<object, readonly number[]>();

/**
 * What least privilege lets through (docs/SEMANTICS.md): each (node, class) where a reachability requirement's
 * traffic arrives, as `${node}:${class}`. A class is as rewritten by the NATs before the node (the states of its
 * graph, or the hops of its atomic flows).
 */
export function reachabilityClasses(model: FlowModel, reqs: Requirement[], members: readonly number[]): Set<string> {
  const out = new Set<string>();
  for (const r of members) {
    if (reqs[r]!.kind === 'isolation') continue;
    const graph = model.graphs[r];
    if (graph) graph.node.forEach((n, k) => graph.classes[k]!.forEach((c) => out.add(`${n}:${c}`)));
    else for (const f of model.flows[r]!.flat()) for (const h of f.hops) out.add(`${h.node}:${h.cls}`);
  }
  return out;
}

/**
 * Does a requirement hold when each (node, class) passes or not as `passes` says? Over its listed paths' atomic flows
 * (isolation: none passes; reachability: one does; complete: every flow of one path does), or over its state graph
 * (a state passes when all its classes do; isolation: no arrival is reached; otherwise one is).
 */
export function holdsWith(model: FlowModel, r: Requirement, passes: (node: number, cls: number) => boolean): boolean {
  const graph = model.graphs[r.index];
  if (!graph) {
    const through = (f: AtomicFlow) => f.hops.every((h) => passes(h.node, h.cls));
    const paths = model.flows[r.index]!;
    if (r.kind === 'isolation') return !paths.flat().some(through);
    if (r.kind === 'reachability') return paths.flat().some(through);
    return paths.some((flows) => flows.length > 0 && flows.every(through));
  }
  const open = (k: number) => graph.classes[k]!.every((c) => passes(graph.node[k]!, c));
  const seen = new Uint8Array(graph.node.length);
  const queue = graph.start.filter((k) => !seen[k] && (seen[k] = 1));
  const arrive = new Set(graph.arrive);
  let arrived = false;
  for (let h = 0; h < queue.length && !arrived; h++) {
    const k = queue[h]!;
    if (arrive.has(k)) arrived = true;
    else if (open(k))
      for (let e = graph.first[k]!; e < graph.first[k + 1]!; e++) {
        const m = graph.to[e]!;
        if (seen[m]) continue;
        seen[m] = 1;
        queue.push(m);
      }
  }
  return r.kind === 'isolation' ? !arrived : arrived;
}
