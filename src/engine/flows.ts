/**
 * Flows: what traffic of each requirement reaches each node of each of its paths, split into atomic classes.
 *
 * Traffic is propagated as exact regions (unions of boxes): a NAT hides private sources behind its address and
 * turns traffic addressed to it back towards its private networks (B 2.6.2); traffic addressed to an intermediate
 * node is delivered there and leaves the flow (B 2.5). All regions seen anywhere become predicates of one
 * partition, refined by the rules of configured firewalls, so that each class is wholly allowed or wholly denied by
 * every firewall. An atomic flow is the sequence of classes a set of packets has at the firewalls and allocation
 * places of a path.
 */
import type { Property } from '../model/types.js';
import type { NetNode } from './network.js';
import {
  DST,
  Partition,
  SRC,
  UNIVERSE,
  boxOf,
  intersect,
  regionIntersect,
  regionSubtract,
  rewrite,
  type Box,
  type PacketClass,
  ruleBoxes,
} from '../model/space.js';

export type RequirementKind = 'isolation' | 'reachability' | 'complete';

export interface Requirement {
  /** Position in the output property list. */
  index: number;
  property: Property;
  kind: RequirementKind;
  src: number;
  dst: number;
  paths: number[][];
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

export interface FlowModel {
  classes: PacketClass[];
  /** Atomic flows per requirement, per path. */
  flows: AtomicFlow[][][];
}

const ANY_ADDRESS = [0, 255, 0, 255, 0, 255, 0, 255];

/** All packets whose source (at = SRC) or destination (at = DST) address lies in the given octet bounds. */
const addressBox = (bounds: number[], at: number): Box => rewrite(UNIVERSE, at, bounds);

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
    const out: Box[] = [];
    for (const box of region) {
      // Addressed to the NAT from outside: turned back towards each private network. From inside: delivered.
      const inbound = intersect(box, toNat);
      if (inbound) {
        let outside = regionSubtract([inbound], addressBox(natAddr, SRC));
        for (const p of privateSrc) outside = regionSubtract(outside, p);
        for (const b of outside) for (const p of n.natSources ?? []) out.push(rewrite(b, DST, p));
      }
      for (const rest of regionSubtract([box], toNat)) {
        // From a private source: to a public destination the source becomes the NAT's address; private to private is
        // unchanged.
        for (const p of privateSrc) {
          for (const b of regionIntersect([rest], p)) {
            let outward = [b];
            for (const q of privateDst) outward = regionSubtract(outward, q);
            for (const o of outward) out.push(rewrite(o, SRC, natAddr));
            for (const q of privateDst) out.push(...regionIntersect([b], q));
          }
        }
        let publicSource = [rest];
        for (const p of privateSrc) publicSource = regionSubtract(publicSource, p);
        out.push(...publicSource);
      }
    }
    return out;
  }
  return n.address ? regionSubtract(region, addressBox(n.address, DST)) : region;
}

const isDecision = (n: NetNode) => n.role === 'place' || n.role === 'firewall';

/** The packets a requirement may send: its source, ports and protocol, to its destination or to a NAT on its way. */
function initialRegion(net: NetNode[], r: Requirement): Box[] {
  const p = r.property;
  const base = boxOf({ src: p.src, dst: p.dst, srcPort: p.srcPort, dstPort: p.dstPort, proto: p.lv4Proto });
  const nats = new Set(r.paths.flatMap((path) => path.slice(1, -1)).filter((k) => net[k]!.role === 'nat'));
  return [base, ...[...nats].map((k) => rewrite(base, DST, net[k]!.address ?? ANY_ADDRESS))];
}

export function computeFlows(net: NetNode[], requirements: Requirement[]): FlowModel {
  const partition = new Partition();
  // Regions along every path, as predicates; remember which predicates each hop's packets lie in.
  const hopPredicates: number[][][][] = requirements.map((r) =>
    r.paths.map((path) => {
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
  // Rules of configured firewalls on some path split the classes further.
  const onPaths = new Set(requirements.flatMap((r) => r.paths.flat()));
  for (const k of [...onPaths].sort((a, b) => a - b)) {
    for (const rule of net[k]!.rules ?? []) for (const box of ruleBoxes(rule)) partition.add(box, false);
  }
  const classes = partition.classes();
  const byPredicate = new Map<number, PacketClass[]>();
  for (const c of classes) for (const m of c.members) (byPredicate.get(m) ?? byPredicate.set(m, []).get(m)!).push(c);
  const classesOf = (predicates: number[]) => {
    const seen = new Set<PacketClass>();
    for (const p of predicates) for (const c of byPredicate.get(p) ?? []) seen.add(c);
    return [...seen].sort((a, b) => a.id - b.id);
  };

  const flows = requirements.map((r, ri) =>
    r.paths.map((path, pi) => {
      const preds = hopPredicates[ri]![pi]!;
      const found = new Map<string, AtomicFlow>();
      const walk = (i: number, region: Box[], hops: Hop[]) => {
        if (region.length === 0) return;
        if (i === path.length - 1) {
          const arrived = regionIntersect(region, addressBox(net[r.dst]!.address!, DST));
          if (arrived.length === 0) return;
          const key = hops.map((h) => `${h.node}:${h.cls}`).join(' ');
          if (!found.has(key)) found.set(key, { requirement: ri, path: pi, hops });
          return;
        }
        const node = net[path[i]!]!;
        const passed = passNode(node, region);
        if (!isDecision(node)) return walk(i + 1, passed, hops);
        for (const c of classesOf(preds[i]!)) {
          const part = c.boxes.flatMap((b) => regionIntersect(passed, b));
          if (part.length) walk(i + 1, part, [...hops, { node: node.index, cls: c.id }]);
        }
      };
      for (const c of classesOf(preds[0]!)) walk(1, c.boxes, []);
      return [...found.values()];
    }),
  );
  return { classes, flows };
}
