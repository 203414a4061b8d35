/**
 * Reconfiguration finds a one-rule fix whenever there is one (issue 48, item 5). Each case is built around a known
 * fix: small random networks (hosts, forwarders, one or two deployed firewalls with random rule lists, sometimes a
 * cycle), one rule inserted at the top of one deployed firewall, and requirements read off that fixed network by
 * the independent evaluator (each random pair an isolation or a reachability, whichever holds there). A case counts
 * only if the network as deployed breaks some requirement, so its least change is exactly one: nfv must answer 1
 * change, and its answer must hold under the evaluator. Nothing here uses the engine but `simulate`.
 */
import t from 'tap';
import { random } from '../../src/bench/topology.js';
import { simulate } from '../../src/engine/simulate.js';
import type { Elements, NFV, Node, Property } from '../../src/model/types.js';
import { violations } from './evaluator.js';

const CASES = 200;

interface Case {
  nfv: NFV;
  /** The firewall and the rule that, inserted first, makes every requirement hold. */
  fix: { firewall: string; rule: Elements };
}

/** The requirements of `nfv` (claimed satisfied) that do not hold in it. */
const broken = (nfv: NFV) => violations(nfv).length;

/** A random case with a known one-rule fix, or undefined when the fix is not needed (all holds as deployed). */
function oneRuleCase(seed: number): Case | undefined {
  const rnd = random(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const chance = (p: number) => rnd() < p;
  const nodes: Node[] = [];
  const byName = new Map<string, Node>();
  const link = (a: string, b: string) => {
    for (const [x, y] of [
      [a, b],
      [b, a],
    ] as const) {
      const n = byName.get(x)!;
      if (!n.neighbour!.some((m) => m.name === y)) n.neighbour!.push({ name: y });
    }
  };
  const add = (node: Node) => {
    nodes.push(node);
    byName.set(node.name, node);
  };
  // The core: one or two deployed firewalls and up to two forwarders, a random tree, sometimes a cycle.
  const firewalls = chance(0.5) ? 1 : 2;
  const core = Array.from({ length: firewalls + Math.floor(rnd() * 3) }, (_, k) => `1.0.0.${k + 1}`);
  core.forEach((name, k) =>
    add(
      k < firewalls
        ? { name, functionalType: 'FIREWALL', neighbour: [] }
        : { name, functionalType: 'FORWARDER', neighbour: [], configuration: { name: 'f', forwarder: { name: 'F' } } },
    ),
  );
  for (let k = 1; k < core.length; k++) link(core[k]!, core[Math.floor(rnd() * k)]!);
  if (core.length > 2 && chance(0.3)) link(core[0]!, core.at(-1)!);
  // Hosts: single addresses and, sometimes, a network (its last octet -1); some share their first octets.
  const hosts: string[] = [];
  const hostCount = 3 + Math.floor(rnd() * 3);
  while (hosts.length < hostCount) {
    const name = `${pick([10, 40])}.${pick([0, 40])}.${pick([1, 2, 79])}.${chance(0.2) ? -1 : pick([1, 4, 9])}`;
    const overlapping = hosts.some((h) =>
      h.split('.').every((o, k) => o === '-1' || name.split('.')[k] === '-1' || o === name.split('.')[k]),
    );
    if (overlapping) continue;
    hosts.push(name);
    add({
      name,
      functionalType: chance(0.5) ? 'WEBCLIENT' : 'WEBSERVER',
      neighbour: [],
      configuration: { name: 'h', webclient: { nameWebServer: 'x' } },
    });
    link(name, pick(core));
  }
  // Rule fields: the hosts' addresses, their generalisations, anything; a few ports.
  const generalised = (h: string) => {
    const o = h.split('.');
    return [h, `${o[0]}.${o[1]}.${o[2]}.-1`, `${o[0]}.${o[1]}.-1.-1`, `${o[0]}.-1.-1.-1`];
  };
  const addresses = ['*', ...new Set(hosts.flatMap(generalised))];
  const rule = (): Elements => {
    const ported = chance(0.25);
    return {
      action: chance(0.5) ? 'ALLOW' : 'DENY',
      source: pick(addresses),
      destination: pick(addresses),
      protocol: ported ? pick(['TCP', 'UDP'] as const) : 'ANY',
      srcPort: '*',
      dstPort: ported ? pick(['22', '80', '0-79']) : '*',
    };
  };
  for (const name of core.slice(0, firewalls)) {
    const elements = Array.from({ length: Math.floor(rnd() * 4) }, rule);
    byName.get(name)!.configuration = {
      name: 'fw',
      firewall: { defaultAction: chance(0.5) ? 'ALLOW' : 'DENY', elements },
    };
  }
  const fix = { firewall: pick(core.slice(0, firewalls)), rule: rule() };
  const nfv: NFV = {
    graphs: { graph: [{ id: 0, node: nodes }] },
    constraints: { nodeConstraints: {}, linkConstraints: {} },
    propertyDefinition: { property: [] },
  };
  const fixed = structuredClone(nfv);
  fixed.graphs
    .graph![0]!.node.find((n) => n.name === fix.firewall)!
    .configuration!.firewall!.elements!.unshift(fix.rule);
  // Requirements: random pairs, some on a port, each the kind that holds once the fix is in.
  const properties: Property[] = [];
  for (let k = 0; k < 4 + Math.floor(rnd() * 5); k++) {
    const src = pick(hosts);
    const dst = pick(hosts.filter((h) => h !== src));
    const port = chance(0.4) ? { lv4Proto: pick(['TCP', 'UDP'] as const), dstPort: pick(['22', '80', '443']) } : {};
    const p: Property = { name: 'REACHABILITY_PROPERTY', graph: 0, src, dst, ...port, isSat: true };
    fixed.propertyDefinition.property = [p];
    if (broken(fixed)) p.name = 'ISOLATION_PROPERTY';
    properties.push(p);
  }
  fixed.propertyDefinition.property = properties;
  if (broken(fixed)) throw new Error(`seed ${seed}: the fix does not hold its own case`);
  nfv.propertyDefinition.property = structuredClone(properties);
  // Without the fix some requirement must fail: then no answer makes fewer than one change.
  return broken(nfv) ? { nfv, fix } : undefined;
}

t.test(`${CASES} random cases with a known one-rule fix: nfv changes exactly one rule`, async (t) => {
  const failed: unknown[] = [];
  let cases = 0;
  let inserted = 0;
  for (let seed = 1; cases < CASES; seed++) {
    const found = oneRuleCase(seed);
    if (!found) continue;
    cases++;
    const { nfv: answer, report } = await simulate(found.nfv, { reconfigure: true });
    const wrong = violations(answer);
    if (report.verdict !== 'SAT' || report.changes !== 1 || wrong.length > 0 || !report.optimal) {
      const { verdict, changes, optimal } = report;
      failed.push({ seed, fix: found.fix, verdict, changes, optimal, wrong: wrong.map((v) => v.why) });
      continue;
    }
    inserted += report.placements.reduce((sum, p) => sum + (p.change?.added.length ?? 0), 0);
  }
  t.same(failed, [], `each of ${CASES} cases answered with one change, proven minimal, every requirement holding`);
  // Some answers remove a rule or flip a default instead; most must insert one rule, as one rule.
  t.ok(inserted > CASES / 2, `${inserted} of ${CASES} answers insert one rule`);
});
