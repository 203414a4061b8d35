/**
 * Rules with except boxes (docs/SEMANTICS.md "Rules with except"): an imported rule set with RETURNs and negations
 * as a FIREWALL node keeps one rule per line reached, the RETURNs' packets as except boxes, where unfolding gives
 * plain rules only (`importedNode(..., plain)`). On 80 seeded rule sets, the two nodes must mean the same:
 * - on every class of the requirements' traffic split by both nodes' rules and except boxes, the engine's first
 *   match (`firstMatchDrops`) on the folded node gives the verdict that the independent evaluator's first match
 *   (test/engine/packets.ts, regions, no engine code) gives on the plain node, and on the folded node;
 * - `simulate` answers each requirement the same through either node, and the independent evaluators agree with
 *   it; reconfigured (`reconfigure`), the folded node's answer holds by the evaluator too and its kept rules keep
 *   their except boxes.
 */
import t from 'tap';
import { random } from '../../../src/model/random.js';
import { importRules, importedNode } from '../../../src/deploy/import/index.js';
import { firstMatchDrops, type NetNode } from '../../../src/engine/flows/network.js';
import { simulate } from '../../../src/engine/simulate.js';
import { Partition, boxOf, exceptBoxes, ruleBoxes } from '../../../src/model/space.js';
import type { NFV, Node, Property } from '../../../src/model/types.js';
import { claimed, violations } from '../evaluator.js';
import { behave, type Box } from '../packets.js';
import { FW, HOSTS, ruleSet } from './except-sets.js';

/** A star around the firewall node and six requirements between its hosts. */
function network(seed: number, fw: Node): NFV {
  const rnd = random(seed * 7 + 1);
  const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)]!;
  const hosts: Node[] = HOSTS.map((h) => ({
    name: h,
    functionalType: 'WEBSERVER',
    neighbour: [{ name: FW }],
    configuration: { name: `h${h}`, webserver: { name: h } },
  }));
  const property: Property[] = [];
  while (property.length < 6) {
    const [src, dst] = [pick(HOSTS), pick(HOSTS)];
    if (src === dst) continue;
    const proto = pick(['TCP', 'UDP', 'ANY'] as const);
    const port = proto === 'ANY' ? undefined : pick(['22', '80', '443', undefined]);
    property.push({
      name: pick(['ISOLATION_PROPERTY', 'REACHABILITY_PROPERTY'] as const),
      graph: 0,
      src,
      dst,
      lv4Proto: proto,
      ...(port ? { dstPort: port } : {}),
    });
  }
  return {
    graphs: { graph: [{ id: 0, node: [{ ...fw, neighbour: HOSTS.map((name) => ({ name })) }, ...hosts] }] },
    constraints: { nodeConstraints: {}, linkConstraints: {} },
    propertyDefinition: { property },
  } as NFV;
}

const volume = (region: Box[]) =>
  region.reduce((n, b) => n + b.reduce((v, x, i) => (i % 2 ? v * (x - b[i - 1]! + 1) : v), 1), 0);

t.test('folded (except) and plain rules: the same verdict on every class, the same answers', async (t) => {
  let classes = 0;
  let folded = 0;
  let plain = 0;
  let excepts = 0;
  let requirements = 0;
  let reconfigured = 0;
  const wrong: string[] = [];
  for (let seed = 1; seed <= 80; seed++) {
    const text = ruleSet(seed);
    const imported = importRules('iptables', text, `gen${seed}.rules`);
    const a = importedNode(imported, FW).node;
    const b = importedNode(imported, FW, undefined, true).node;
    const rulesA = a.configuration!.firewall!.elements!;
    const rulesB = b.configuration!.firewall!.elements!;
    folded += rulesA.length;
    plain += rulesB.length;
    excepts += rulesA.filter((e) => e.except?.length).length;
    const nfv = network(seed, a);
    // Every class of the requirements' traffic, split by both nodes' rules and except boxes.
    const partition = new Partition();
    for (const p of nfv.propertyDefinition.property)
      partition.add(boxOf({ src: p.src, dst: p.dst, dstPort: p.dstPort, proto: p.lv4Proto }), true);
    for (const e of [...rulesA, ...rulesB])
      for (const x of [...ruleBoxes(e), ...exceptBoxes(e)]) partition.add(x, false);
    const engineNode = { rules: rulesA, defaultAction: a.configuration!.firewall!.defaultAction } as NetNode;
    for (const c of partition.classes()) {
      classes++;
      const engine = !firstMatchDrops(engineNode, c);
      const region = c.boxes.map((x) => [...x]);
      const whole = volume(region);
      const verdicts = [a, b].map((node) => {
        const passed = volume(behave({ ...node, name: 'fw' }, region, true));
        return passed === whole ? true : passed === 0 ? false : undefined;
      });
      if (verdicts[0] !== engine || verdicts[1] !== engine)
        wrong.push(
          `gen${seed}: class ${JSON.stringify(c.boxes[0])}: engine ${engine}, folded ${verdicts[0]}, plain ${verdicts[1]}`,
        );
    }
    // The engine's answers through either node, and the evaluators' own.
    const [ra, rb] = [await simulate(nfv), await simulate(network(seed, b))];
    const sat = (r: NFV) => r.propertyDefinition.property.map((p) => p.isSat === true);
    const truth = sat(claimed(nfv));
    requirements += truth.length;
    if (
      JSON.stringify(sat(ra.nfv)) !== JSON.stringify(sat(rb.nfv)) ||
      JSON.stringify(sat(ra.nfv)) !== JSON.stringify(truth)
    )
      wrong.push(`gen${seed}: folded ${sat(ra.nfv)}, plain ${sat(rb.nfv)}, evaluator ${truth}`);
    if (JSON.stringify(sat(claimed(network(seed, b)))) !== JSON.stringify(truth))
      wrong.push(`gen${seed}: the evaluator differs on the plain node`);
    // Reconfigured: the answer holds by the evaluator; kept rules keep their except boxes.
    const re = await simulate(nfv, { reconfigure: true });
    const broken = violations(re.nfv);
    if (broken.length) wrong.push(`gen${seed}: reconfigured, ${broken[0]!.why}`);
    const node = re.nfv.graphs.graph![0]!.node.find((n) => n.name === FW)!;
    const kept = node.configuration!.firewall!.elements!.filter((e) => e.origin !== undefined);
    for (const e of kept) {
      const same = (r: typeof e) => JSON.stringify({ ...r, id: 0 }) === JSON.stringify({ ...e, id: 0 });
      if (!rulesA.some(same)) wrong.push(`gen${seed}: reconfiguration changed ${e.origin}: ${JSON.stringify(e)}`);
    }
    if (re.nfv.propertyDefinition.property.every((p) => p.isSat)) reconfigured++;
  }
  t.same(wrong.slice(0, 5), [], `${classes} classes, ${requirements} requirements over 80 rule sets`);
  t.ok(excepts > 40, `${excepts} of ${folded} folded rules carry except boxes`);
  t.ok(folded < plain, `${folded} folded rules, ${plain} plain ones`);
  t.ok(reconfigured > 40, `${reconfigured} of 80 reconfigured to hold every requirement`);
});
