/**
 * Batfish's five running examples of filterLineReachability (docs "Simpler FilterLineReachability results", the
 * answers of approach D that Batfish implements, #2823), written in nfv's rule model as test/fixtures/batfish/*.json
 * (line numbers as rule ids): the blocked line, its blocking lines and whether one has a different action. Where
 * nfv's elements cannot say what Batfish's line says, the fixture says how it is written, and the line model (one
 * line as several boxes, or none, as an importer gives it) is checked as well. Then the cases lint must tell apart:
 * shadowed by one rule, by several together, unmatchable, partly overlapped but reachable, redundant.
 */
import t from 'tap';
import { lint, listOfNode, type Line, type RuleList } from '../../../src/deploy/analysis/index.js';
import type { Elements, Node } from '../../../src/model/types.js';
import { fixture } from '../../helpers.js';

const load = async (name: string): Promise<Node> => JSON.parse(await fixture(`batfish/${name}.json`)) as Node;
const findings = (list: RuleList) =>
  lint(list).findings.map((f) => ({
    rule: f.rule === 'default' ? 'default' : (f.rule.id ?? f.rule.position),
    finding: f.finding,
    by: f.by.map((r) => (r === 'default' ? 'default' : (r.id ?? r.position))),
    differentAction: f.differentAction,
  }));

t.test('example 1, DDoS: 255 tiny overlaps and one real blocker', async (t) => {
  const node = await load('1-ddos');
  t.equal(node.configuration!.firewall!.elements!.length, 257);
  // Batfish: blocked 3010, blocking [10, 3000], different action true (the first of the equal DDoS lines joins as
  // the largest blocker with the other action).
  t.same(findings(listOfNode(node, 'ex1')), [
    { rule: 3010, finding: 'shadowed', by: [10, 3000], differentAction: true },
  ]);
});

t.test('example 2: two partial overlaps block together', async (t) => {
  // Batfish: permit any 1.2.3.0/25, deny any 1.2.3.128/25, permit any 1.2.3.0/24. Octet patterns cannot split a
  // /24, so the halves are the two halves of the TCP port range: the same geometry.
  // Redundancy is nfv's addition (Batfish reports only unreachable lines): line 10 allows what line 30 allows anyway.
  t.same(findings(listOfNode(await load('2-partial-overlaps'), 'ex2')), [
    { rule: 10, finding: 'redundant', by: [30], differentAction: false },
    { rule: 30, finding: 'shadowed', by: [10, 20], differentAction: true },
  ]);
});

t.test('example 3: multiple blockers, not all used', async (t) => {
  // And line 20 denies only what the (implicit, as in Batfish) DENY default denies.
  t.same(findings(listOfNode(await load('3-multiple-blockers'), 'ex3')), [
    { rule: 20, finding: 'redundant', by: ['default'], differentAction: false },
    { rule: 30, finding: 'redundant-unreachable', by: [10], differentAction: false },
  ]);
});

t.test('example 4: one almost-blocker and one blocker', async (t) => {
  const node = await load('4-almost-blocker');
  // "deny tcp any 1.2.3.4 neq 80" is two elements (ports 0-79 and 81-65535): the blocker (30, all of it) and the
  // largest rule with the other action (20) are named.
  t.same(findings(listOfNode(node, 'ex4')), [{ rule: 40, finding: 'shadowed', by: [20, 30], differentAction: true }]);
  // As one line of two boxes (an imported `! --dport 80`), Batfish's own answer: blocking [10, 20].
  const list = listOfNode(node, 'ex4 as lines');
  const [a, b, ...rest] = list.lines;
  const neq80: Line = { ...a!, boxes: [...a!.boxes, ...b!.boxes], text: 'DENY TCP * -> 1.2.3.4 dport != 80' };
  const lines = [neq80, ...rest].map((l, k) => ({ ...l, position: k + 1, id: 10 * (k + 1) }));
  t.same(findings({ ...list, lines }), [{ rule: 30, finding: 'shadowed', by: [10, 20], differentAction: true }]);
});

t.test('example 5: TCP established, read for new connections', async (t) => {
  const list = listOfNode(await load('5-tcp-established'), 'ex5');
  // Line 10, "permit tcp any any established", matches no first packet of a connection: an importer gives it no
  // box. It is unmatchable, and line 20 alone blocks line 30 (Batfish: blocking [20], different action true).
  const established: Line = { position: 1, id: 10, allow: true, boxes: [], text: 'ALLOW TCP * -> * established' };
  const lines = [established, ...list.lines.map((l) => ({ ...l, position: l.position + 1, id: l.id! + 10 }))];
  t.same(findings({ ...list, lines }), [
    { rule: 10, finding: 'unmatchable', by: [], differentAction: false },
    { rule: 30, finding: 'shadowed', by: [20], differentAction: true },
  ]);
  t.same(findings(list), [{ rule: 20, finding: 'shadowed', by: [10], differentAction: true }], 'as elements alone');
});

const fw = (elements: Elements[], defaultAction: 'ALLOW' | 'DENY' = 'DENY'): Node => ({
  name: '30.0.0.1',
  functionalType: 'FIREWALL',
  configuration: { name: 'c', firewall: { defaultAction, elements: elements.map((e, k) => ({ id: k + 1, ...e })) } },
});

t.test('the cases lint tells apart', async (t) => {
  const one = findings(
    listOfNode(
      fw([
        { action: 'DENY', source: '10.0.0.-1', destination: '*' },
        { action: 'ALLOW', source: '10.0.0.5', destination: '20.0.0.1', protocol: 'TCP', dstPort: '443' },
      ]),
      'one',
    ),
  );
  t.same(one, [{ rule: 2, finding: 'shadowed', by: [1], differentAction: true }], 'shadowed by one earlier rule');
  const several = findings(
    listOfNode(
      fw([
        { action: 'ALLOW', source: '*', destination: '20.0.0.1', protocol: 'TCP' },
        { action: 'DENY', source: '*', destination: '20.0.0.1', protocol: 'UDP' },
        { action: 'DENY', source: '*', destination: '20.0.0.1', protocol: 'OTHER' },
        { action: 'ALLOW', source: '10.0.0.-1', destination: '20.0.0.1' },
      ]),
      'several',
    ),
  );
  t.same(several, [{ rule: 4, finding: 'shadowed', by: [1, 2, 3], differentAction: true }], 'by several together');
  const partial = findings(
    listOfNode(
      fw([
        { action: 'DENY', source: '10.0.0.-1', destination: '20.0.0.1', protocol: 'TCP', dstPort: '0-1023' },
        { action: 'ALLOW', source: '10.0.0.-1', destination: '20.0.0.-1', protocol: 'TCP' },
      ]),
      'partial',
    ),
  );
  t.same(partial, [], 'partly overlapped by earlier rules: still reached, and it decides packets differently');
  const redundant = findings(
    listOfNode(
      fw([
        { action: 'ALLOW', source: '10.0.0.-1', destination: '20.0.0.1', protocol: 'TCP', dstPort: '80' },
        { action: 'DENY', source: '10.0.0.9', destination: '20.0.0.2' },
        { action: 'ALLOW', source: '10.0.0.-1', destination: '20.0.0.-1', protocol: 'TCP' },
        { action: 'DENY', source: '192.168.0.-1', destination: '*' },
      ]),
      'redundant',
    ),
  );
  t.same(
    redundant,
    [
      { rule: 1, finding: 'redundant', by: [3], differentAction: false },
      { rule: 4, finding: 'redundant', by: ['default'], differentAction: false },
    ],
    'redundant: what it decides, later rules and the default decide alike',
  );
  t.same(
    findings(listOfNode(fw([{ action: 'ALLOW', source: '*', destination: '*' }], 'ALLOW'), 'all')),
    [{ rule: 1, finding: 'redundant', by: ['default'], differentAction: false }],
    'an ALLOW-all above an ALLOW default',
  );
  t.same(findings(listOfNode(fw([]), 'empty')), [], 'no rules, nothing to say');
});

t.test('rules mean what the engine verifies', async (t) => {
  // An absent action is DENY; ALLOW_COND drops as in the engine; directional adds the reverse (docs/SEMANTICS.md).
  const list = listOfNode(
    fw([
      { source: '10.0.0.1', destination: '*' },
      { action: 'ALLOW_COND', source: '10.0.0.2', destination: '*' },
      { action: 'ALLOW', source: '10.0.0.3', destination: '20.0.0.1', directional: true },
      { action: 'ALLOW', source: '20.0.0.1', destination: '10.0.0.3' },
    ]),
    'engine',
  );
  t.same(
    list.lines.map((l) => l.allow),
    [false, false, true, true],
  );
  t.same(findings(list), [
    { rule: 1, finding: 'redundant', by: ['default'], differentAction: false },
    { rule: 2, finding: 'redundant', by: ['default'], differentAction: false },
    // Rule 3's reverse already allows what rule 4 allows.
    { rule: 4, finding: 'redundant-unreachable', by: [3], differentAction: false },
  ]);
  t.throws(() => listOfNode({ name: 'n', functionalType: 'NAT' }, 'a NAT'), /node: a NAT is not a firewall/);
  t.throws(
    () => listOfNode({ name: 'n', functionalType: 'FIREWALL' }, 'bare'),
    /node: bare has no firewall configuration/,
  );
});
