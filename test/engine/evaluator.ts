/**
 * An evaluator of simulation results that shares nothing with the engine's encoding: it walks every simple path of
 * the result network and applies each node's behaviour to sets of packets, then says which requirements claimed
 * satisfied (`isSat`) do not hold.
 *
 * Packets are boxes over 11 dimensions: the four octets of the source and of the destination address, the source
 * and destination port, and the protocol. A packet of protocol OTHER has no ports: its port dimensions are never
 * narrowed, and a port condition (of a rule or a requirement) holds TCP and UDP packets only (docs/SEMANTICS.md).
 * A rule address is an octet pattern or a CIDR prefix `A.B.C.D/P`, read here bit by bit: the addresses whose first
 * P bits equal A's. A node's behaviour (engine.md A.2, B 2.4 to 2.6):
 * - end hosts never forward; FIREWALL applies its rules first match in order (a rule without action denies, no match
 *   means the default action, DENY when absent; a rule matches none of the packets of its `except` entries);
 * - NAT with address N hiding the patterns P: from P to outside P (not N) the source becomes N; from outside P to N
 *   the destination becomes each pattern of P; between two of P unchanged; from P to N delivered there; with a
 *   forward table (docs/SEMANTICS.md, "Port forwards"), from outside P to N the first entry matching the packet's
 *   protocol and destination port sets its destination to the entry's host (and its destination port to the
 *   entry's port, if given), and a packet no entry matches is delivered to N; with a `translate` list
 *   (docs/SEMANTICS.md, "Translation by destination"), from P (not to N) only the packets an entry matches
 *   (protocol, destination port, its source if given, its destination) get source N, the rest go on unchanged,
 *   and from outside P to N is as with an empty forward table;
 * - every other node forwards unchanged, except packets addressed to it (its name as an address pattern), which are
 *   delivered there and leave the path.
 * Traffic of a requirement: its source and destination addresses, ports and protocol, and the same addressed to each
 * NAT on the path (the way to reach what a NAT hides). What arrives is what reaches the destination addressed to it.
 * Isolation: nothing arrives on any path. Reachability: something arrives on some path. Complete reachability: on
 * some path everything arrives that would arrive with every firewall removed.
 *
 * The packet semantics live in `packets.ts`, shared with `evaluator-pathfree.ts`. A requirement with more simple
 * paths than the limit (a redundant network) is decided by the path-free evaluator, which has the same meaning.
 */
import { simulate, type SimulateOptions } from '../../src/engine/simulate.js';
import { MAX_TIMEOUT_SECONDS } from '../../src/model/limits.js';
import type { NFV } from '../../src/model/types.js';
import { decide, pathFreeViolations } from './evaluator-pathfree.js';
import { TooManyPaths, arrives, minus, octets, simplePaths, type Violation } from './packets.js';

/** Requirements of `result` claimed satisfied that do not hold in its network. */
export function violations(result: NFV, pathLimit = 20_000): Violation[] {
  const out: Violation[] = [];
  const graphs = new Map((result.graphs.graph ?? []).map((g) => [g.id ?? 0, g]));
  const fixedPaths = result.networkForwardingPaths?.path ?? [];
  result.propertyDefinition.property.forEach((p, index) => {
    if (p.isSat !== true) return;
    const graph = graphs.get(p.graph);
    const nodes = new Map((graph?.node ?? []).map((n) => [n.name, n]));
    if (!nodes.has(p.src) || !nodes.has(p.dst) || !octets(p.src) || !octets(p.dst)) {
      out.push({ index, property: p, why: 'its source or destination is not an addressed node of the result' });
      return;
    }
    const fixed = fixedPaths.filter((f) => f.pathNode[0]?.name === p.src && f.pathNode.at(-1)?.name === p.dst).at(-1);
    let paths: string[][];
    try {
      paths = fixed ? [fixed.pathNode.map((n) => n.name)] : simplePaths(nodes, p.src, p.dst, pathLimit);
    } catch (e) {
      // Too many paths to list (a redundant network): the path-free evaluator decides it, with the same meaning.
      if (!(e instanceof TooManyPaths)) throw e;
      const verdict = decide(nodes, p, undefined, pathLimit);
      if (!verdict.holds) out.push({ index, property: p, why: verdict.why! });
      return;
    }
    const arrived = paths.map((path) => arrives(nodes, p, path, true));
    if (p.name === 'ISOLATION_PROPERTY') {
      const k = arrived.findIndex((r) => r.length > 0);
      if (k >= 0) out.push({ index, property: p, why: `traffic arrives along ${paths[k]!.join(' > ')}` });
    } else if (p.name === 'REACHABILITY_PROPERTY') {
      if (!arrived.some((r) => r.length > 0)) out.push({ index, property: p, why: 'no traffic arrives on any path' });
    } else {
      const whole = paths.some((path, k) => {
        const open = arrives(nodes, p, path, false);
        return open.length > 0 && arrived[k]!.reduce((rest, b) => minus(rest, b), open).length === 0;
      });
      if (!whole) out.push({ index, property: p, why: 'no path lets all of its traffic arrive' });
    }
  });
  return out;
}

/**
 * The engine's answer, re-checked by the path-free evaluator (issue 26: no listing of paths on networks with cycles;
 * checked against this file's path evaluator in evaluator-pathfree.test.ts): throws, naming each requirement claimed
 * satisfied that does not hold.
 */
export async function checkedSimulate(nfv: NFV, options: SimulateOptions = {}): ReturnType<typeof simulate> {
  // The longest time limit unless a test sets one: answers count work, not seconds, and the 60 s default ran out
  // for Geant at load average 25 (a 504 where the answer would have come).
  const result = await simulate(nfv, { timeoutSeconds: MAX_TIMEOUT_SECONDS, ...options });
  const found = pathFreeViolations(result.nfv);
  if (found.length) {
    const lines = found.map((v) => `#${v.index} ${v.property.name} ${v.property.src} -> ${v.property.dst}: ${v.why}`);
    throw new Error(`claimed satisfied but does not hold:\n${lines.join('\n')}`);
  }
  return result;
}

/** The claims the independent evaluator makes: each requirement holds unless it finds it broken. */
export function claimed(nfv: NFV): NFV {
  const copy = structuredClone(nfv);
  for (const p of copy.propertyDefinition.property) p.isSat = true;
  const broken = new Set(violations(copy).map((v) => v.index));
  copy.propertyDefinition.property.forEach((p, k) => (p.isSat = !broken.has(k)));
  return copy;
}
