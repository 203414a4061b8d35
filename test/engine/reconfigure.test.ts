/**
 * Reconfiguration: new requirements on deployed firewalls, answered with the fewest rule changes. VEREFOO's REACT
 * inputs keep the verdicts of engine.md 4.4 with no more changes than its rewrite; hand-made cases, where the
 * minimal change is known by construction, check the counts exactly. Every answer goes through the evaluator.
 * The one-rule fixes on random networks (reconfigure-one-rule.ts) run in this process too: a process of their own cost
 * about a CPU second of start (docs/performance-log.md, "Cutting the CPU: test/engine and test/bench (30 November,
 * wt-eng12)").
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { decodeDocument } from '../../src/model/codec.js';
import { NfvType } from '../../src/model/resources.js';
import type { Elements, Property } from '../../src/model/types.js';
import { firewall, forwarder, isolation, nat, network, place, reachability, webclient, webserver } from './build.js';
import './reconfigure-one-rule.part.js';
import { checkedSimulate } from './evaluator.js';

const REACT = path.resolve('..', 'shared', 'verefoo-testfile', 'REACT');
const deny = (source: string, destination: string): Elements => ({
  action: 'DENY',
  source,
  destination,
  protocol: 'ANY',
  srcPort: '*',
  dstPort: '*',
});

/**
 * VEREFOO's rewrite, counted the way we count: a marked firewall loses every old rule and gains every new one
 * (engine.md B 2.13); REACT/Test1's marked firewall becomes a forwarder, its DENY default gone for the 2 classes
 * that reach it.
 */
const VEREFOO = [
  { file: 'Test1.xml', verdict: 'SAT', changes: 2 },
  { file: 'Test2.xml', verdict: 'SAT', changes: 4 },
  { file: 'Test3.xml', verdict: 'SAT', changes: 6 },
];
for (const ref of VEREFOO) {
  t.test(`REACT/${ref.file}: verdict as VEREFOO's, no more changes than its rewrite`, async (t) => {
    const nfv = decodeDocument(NfvType, readFileSync(path.join(REACT, ref.file), 'utf8'));
    const first = await checkedSimulate(nfv, { reconfigure: true });
    t.equal(first.report.verdict, ref.verdict);
    t.ok(first.report.changes! <= ref.changes, `${first.report.changes} changes, VEREFOO's rewrite ${ref.changes}`);
    t.ok(first.report.optimal, 'proven minimal');
    const again = await checkedSimulate(nfv, { reconfigure: true });
    t.equal(JSON.stringify(again.nfv), JSON.stringify(first.nfv), 'the same input gives the same answer');
  });
}

/** Two deployed firewalls in series between two clients and two servers; no place for a new one. */
const series = (properties: Property[]) =>
  network(
    [
      webclient('10.0.0.1', '1.0.0.1'),
      webclient('10.0.0.2', '1.0.0.1'),
      firewall('1.0.0.1', 'ALLOW', [deny('10.0.0.1', '20.0.0.1')], '10.0.0.1', '10.0.0.2', '2.0.0.1'),
      forwarder('2.0.0.1', '1.0.0.1', '1.0.0.2'),
      firewall('1.0.0.2', 'ALLOW', [deny('10.0.0.2', '20.0.0.2')], '2.0.0.1', '20.0.0.1', '20.0.0.2'),
      webserver('20.0.0.1', '1.0.0.2'),
      webserver('20.0.0.2', '1.0.0.2'),
    ],
    properties,
  );
const built = [
  isolation('10.0.0.1', '20.0.0.1'),
  isolation('10.0.0.2', '20.0.0.2'),
  reachability('10.0.0.1', '20.0.0.2'),
  reachability('10.0.0.2', '20.0.0.1'),
];

const changeOf = (report: Awaited<ReturnType<typeof checkedSimulate>>['report'], node: string) =>
  report.placements.find((p) => p.node === node)?.change;

t.test('nothing new: nothing changes', async (t) => {
  const { report } = await checkedSimulate(series(built), { reconfigure: true });
  t.equal(report.verdict, 'SAT');
  t.equal(report.changes, 0);
  t.same(changeOf(report, '1.0.0.1')?.kept, [1]);
  t.same(changeOf(report, '1.0.0.2')?.kept, [1]);
});

t.test('one isolation added: one rule added, every old rule kept in place', async (t) => {
  const { report, nfv } = await checkedSimulate(series([...built.slice(0, 2), isolation('10.0.0.1', '20.0.0.2')]), {
    reconfigure: true,
  });
  t.equal(report.verdict, 'SAT');
  t.equal(report.changes, 1);
  const changes = ['1.0.0.1', '1.0.0.2'].map((n) => changeOf(report, n)!);
  t.same(
    changes.map((c) => c.removed),
    [[], []],
    'nothing removed',
  );
  t.equal(changes[0]!.added.length + changes[1]!.added.length, 1, 'one rule added');
  const fw = nfv.graphs.graph![0]!.node.find((n) => n.name === (changes[0]!.added.length ? '1.0.0.1' : '1.0.0.2'))!;
  t.same(fw.configuration!.firewall!.elements!.slice(1), [
    changes[0]!.added.length ? deny('10.0.0.1', '20.0.0.1') : deny('10.0.0.2', '20.0.0.2'),
  ]);
});

t.test('one isolation flipped to a reachability: its rule removed, nothing else', async (t) => {
  const { report } = await checkedSimulate(series([reachability('10.0.0.1', '20.0.0.1'), ...built.slice(1)]), {
    reconfigure: true,
  });
  t.equal(report.verdict, 'SAT');
  t.equal(report.changes, 1);
  t.same(changeOf(report, '1.0.0.1'), {
    kept: [],
    removed: [1],
    added: [],
    defaultAction: { from: 'ALLOW', to: 'ALLOW' },
    changes: 1,
  });
  t.equal(changeOf(report, '1.0.0.2')?.changes, 0);
});

t.test('one isolation dropped from the list: its rule stays (no change is cheaper than a removal)', async (t) => {
  const { report } = await checkedSimulate(series([built[0]!, ...built.slice(2)]), { reconfigure: true });
  t.equal(report.changes, 0);
  t.same(changeOf(report, '1.0.0.2')?.kept, [1]);
});

/** Private clients behind a NAT, a rule-less firewall in front of the NAT and a deployed one behind it. */
const natted = (properties: Property[]) =>
  network(
    [
      webclient('192.168.0.1', '1.0.0.9'),
      webclient('192.168.0.2', '1.0.0.9'),
      firewall('1.0.0.9', 'ALLOW', [], '192.168.0.1', '192.168.0.2', '30.0.0.1'),
      nat('30.0.0.1', ['192.168.0.-1'], '1.0.0.9', '1.0.0.1'),
      firewall('1.0.0.1', 'ALLOW', [deny('30.0.0.1', '20.0.0.1')], '30.0.0.1', '2.0.0.1'),
      forwarder('2.0.0.1', '1.0.0.1', '20.0.0.1', '20.0.0.2'),
      webserver('20.0.0.1', '2.0.0.1'),
      webserver('20.0.0.2', '2.0.0.1'),
    ],
    properties,
  );

t.test('behind a NAT: a new reachability for one hidden client moves the isolation before the NAT', async (t) => {
  const { report, nfv } = await checkedSimulate(
    natted([
      isolation('192.168.0.1', '20.0.0.1'),
      reachability('192.168.0.2', '20.0.0.1'),
      reachability('192.168.0.1', '20.0.0.2'),
    ]),
    { reconfigure: true },
  );
  t.equal(report.verdict, 'SAT');
  t.equal(report.changes, 2, 'one rule removed behind the NAT, one added before it');
  t.same(changeOf(report, '1.0.0.1')?.removed, [1]);
  t.equal(changeOf(report, '1.0.0.9')?.added.length, 1);
  const front = nfv.graphs.graph![0]!.node.find((n) => n.name === '1.0.0.9')!;
  t.match(front.configuration!.firewall!.elements, [
    { action: 'DENY', source: '192.168.0.1', destination: '20.0.0.1' },
  ]);
});

t.test('behind a NAT: an isolation added for every hidden client is one rule on the NAT address', async (t) => {
  const { report } = await checkedSimulate(
    natted([
      isolation('192.168.0.1', '20.0.0.1'),
      isolation('192.168.0.1', '20.0.0.2'),
      isolation('192.168.0.2', '20.0.0.2'),
    ]),
    { reconfigure: true },
  );
  t.equal(report.verdict, 'SAT');
  t.equal(report.changes, 1);
});

t.test('a place may still get a new firewall, but a change to a deployed one comes first', async (t) => {
  const nfv = network(
    [
      webclient('10.0.0.1', '1.0.0.5'),
      place('1.0.0.5', '10.0.0.1', '1.0.0.1'),
      firewall('1.0.0.1', 'ALLOW', [], '1.0.0.5', '20.0.0.1'),
      webserver('20.0.0.1', '1.0.0.1'),
    ],
    [isolation('10.0.0.1', '20.0.0.1')],
  );
  const { report } = await checkedSimulate(nfv, { reconfigure: true });
  t.equal(report.allocated, 0, 'no new firewall');
  t.equal(report.changes, 1, 'one rule (or a flipped default for the one class) on the deployed one');
});

t.test('InitialProperty: requirements on both lists are checked on the network as deployed', async (t) => {
  const nfv = decodeDocument(NfvType, readFileSync(path.join(REACT, 'Test2.xml'), 'utf8'));
  const { report } = await checkedSimulate(nfv, { reconfigure: true });
  t.same(
    report.requirements.map((r) => r.heldBefore),
    [...Array(8).fill(true), ...Array(4).fill(undefined)],
    'the 8 kept ones held as deployed; the 4 new ones are not on the initial list',
  );
  const claimed = series([...built.slice(0, 3), isolation('10.0.0.2', '20.0.0.1')]);
  claimed.initialProperty = { property: [built[0]!, isolation('10.0.0.2', '20.0.0.1')] };
  const answer = await checkedSimulate(claimed, { reconfigure: true });
  t.same(
    answer.report.requirements.map((r) => r.heldBefore),
    [true, undefined, undefined, false],
    'an initial requirement the deployed rules do not enforce is said so',
  );
  t.equal(answer.report.requirements[3]!.isSat, true, 'and it is enforced now');
  t.equal(answer.report.changes, 1);
  const plain = await checkedSimulate(claimed);
  t.equal(plain.report.requirements[0]!.heldBefore, undefined, 'only a reconfiguration looks at InitialProperty');
});

t.test('the rules of one live line (an imported firewall) are kept or removed together, as one change', async (t) => {
  // Line 7 of a live file denied two sources at once; the new requirement lets 10.0.0.1 through, 10.0.0.2 not.
  const line = (source: string): Elements => ({ ...deny(source, '20.0.0.1'), origin: 'live.rules:7' });
  const nfv = network(
    [
      webclient('10.0.0.1', '1.0.0.1'),
      webclient('10.0.0.2', '1.0.0.1'),
      firewall('1.0.0.1', 'ALLOW', [line('10.0.0.1'), line('10.0.0.2')], '10.0.0.1', '10.0.0.2', '20.0.0.1'),
      webserver('20.0.0.1', '1.0.0.1'),
    ],
    [reachability('10.0.0.1', '20.0.0.1'), isolation('10.0.0.2', '20.0.0.1')],
  );
  const { report } = await checkedSimulate(nfv, { reconfigure: true });
  t.equal(report.verdict, 'SAT');
  const change = report.placements.find((p) => p.node === '1.0.0.1')!.change!;
  // Removing the first rule alone (1 change, fewer rules) would cut the line in two; the whole line kept and one
  // ALLOW rule above it is the least change that keeps lines whole.
  t.same(change.kept, [1, 2], 'the line kept whole');
  t.equal(change.added.length, 1);
  t.equal(change.changes, 1);
  // Without a line, each rule is its own: the first one goes.
  const plain = structuredClone(nfv);
  for (const e of plain.graphs.graph![0]!.node[2]!.configuration!.firewall!.elements!) delete e.origin;
  const alone = (await checkedSimulate(plain, { reconfigure: true })).report.placements[0]!.change!;
  t.same([alone.kept, alone.removed, alone.changes], [[2], [1], 1]);
});

t.test(
  'inserted rules of both actions: a narrow DENY above a wide ALLOW where ALLOW rules alone take more',
  async (t) => {
    // 20.0.0.1, .2 and .4 reachable, .3 not: no prefix or pattern takes .1, .2 and .4 without .3, so ALLOW rules alone
    // take 3 (a flipped default 4, one per class); DENY .3 above one ALLOW of them all takes 2.
    const servers = ['20.0.0.1', '20.0.0.2', '20.0.0.3', '20.0.0.4'];
    const nfv = network(
      [
        webclient('10.0.0.1', '1.0.0.1'),
        firewall('1.0.0.1', 'DENY', [], '10.0.0.1', ...servers),
        ...servers.map((s) => webserver(s, '1.0.0.1')),
      ],
      servers.map((s) => (s === '20.0.0.3' ? isolation('10.0.0.1', s) : reachability('10.0.0.1', s))),
    );
    const { report } = await checkedSimulate(nfv, { reconfigure: true });
    t.equal(report.verdict, 'SAT');
    t.equal(report.changes, 2);
    t.ok(report.optimal, 'proven minimal');
    const added = report.placements[0]!.change!.added.map((a) => a.rule);
    t.match(added, [{ action: 'DENY', destination: '20.0.0.3' }, { action: 'ALLOW' }], 'the DENY rule first');
  },
);
