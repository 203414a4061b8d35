/**
 * `objective: 'least-privilege'` (docs/SEMANTICS.md): every used firewall whose rules nfv writes lets through only
 * traffic some reachability requirement brings there, then as few rules as that allows. Checked by `privilege.ts`,
 * which shares no code with the engine, on the office sample and on 100 random networks with cycles, NATs, places
 * and rule-less firewalls; every answer is also re-checked by the evaluator.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { decodeDocument } from '../../src/model/codec.js';
import { NfvError } from '../../src/model/errors.js';
import { NfvType } from '../../src/model/resources.js';
import type { NFV } from '../../src/model/types.js';
import type { SimulateOptions, SimulationResult } from '../../src/engine/simulate.js';
import { ROOT } from '../helpers.js';
import { checkedSimulate } from './evaluator.js';
import { firewall, isolation, network, place, reachability, webclient, webserver } from './build.js';
import { privilegeExcess } from './privilege.js';
import { withDecisions } from './random-network.js';

const office = async () =>
  decodeDocument(NfvType, await readFile(path.join(ROOT, 'samples', 'office-nat.xml'), 'utf8')) as NFV;

const rulesOf = (nfv: NFV, name: string) =>
  nfv.graphs.graph![0]!.node.find((n) => n.name === name)?.configuration?.firewall;

t.test(
  'office sample: least privilege allows HTTPS to the server only; the default keeps the wider rule',
  async (t) => {
    const input = await office();
    const fewest = await checkedSimulate(structuredClone(input));
    t.equal(fewest.report.objective, 'fewest-rules');
    t.same(rulesOf(fewest.nfv, '10.255.0.1')?.elements, [
      {
        action: 'ALLOW',
        source: '192.168.1.10',
        destination: '-1.-1.-1.-1',
        protocol: 'ANY',
        srcPort: '*',
        dstPort: '*',
      },
    ]);
    t.not(privilegeExcess(input, fewest.nfv).length, 0, 'the fewest rules let through more than HTTPS');

    const least = await checkedSimulate(structuredClone(input), { objective: 'least-privilege' });
    t.equal(least.report.objective, 'least-privilege');
    t.equal(least.report.verdict, 'SAT');
    t.equal(least.report.optimal, true);
    t.same(rulesOf(least.nfv, '10.255.0.1'), {
      defaultAction: 'DENY',
      elements: [
        {
          action: 'ALLOW',
          source: '192.168.1.10',
          destination: '198.51.100.80',
          protocol: 'TCP',
          srcPort: '*',
          dstPort: '443',
        },
      ],
    });
    t.same(privilegeExcess(input, least.nfv), []);
  },
);

t.test(
  "firewalls given a default ALLOW keep it, and each denies the requirements' traffic no reachability brings",
  async (t) => {
    // 10.0.0.1 > 10.0.0.2 > 10.0.0.5 > 10.0.0.3, both firewalls given ALLOW without rules.
    const nfv = network(
      [
        webclient('10.0.0.1', '10.0.0.2'),
        firewall('10.0.0.2', 'ALLOW', [], '10.0.0.1', '10.0.0.5'),
        firewall('10.0.0.5', 'ALLOW', [], '10.0.0.2', '10.0.0.3'),
        webserver('10.0.0.3', '10.0.0.5'),
      ],
      [
        reachability('10.0.0.1', '10.0.0.3', { lv4Proto: 'TCP', dstPort: '80' }),
        isolation('10.0.0.1', '10.0.0.3', { lv4Proto: 'UDP' }),
      ],
    );
    const fewest = await checkedSimulate(structuredClone(nfv));
    t.equal(fewest.report.rules, 1, 'one firewall denies UDP');
    t.equal(privilegeExcess(nfv, fewest.nfv).length, 1, 'the other lets UDP through');
    const least = await checkedSimulate(structuredClone(nfv), { objective: 'least-privilege' });
    for (const fw of ['10.0.0.2', '10.0.0.5'])
      t.same(rulesOf(least.nfv, fw), {
        defaultAction: 'ALLOW',
        elements: [
          // DENY rules are widened as before: they only let through less.
          {
            action: 'DENY',
            source: '-1.-1.-1.-1',
            destination: '-1.-1.-1.-1',
            protocol: 'UDP',
            srcPort: '*',
            dstPort: '*',
          },
        ],
      });
    t.same(privilegeExcess(nfv, least.nfv), []);
    await t.rejects(checkedSimulate(nfv, { objective: 'fewest' as SimulateOptions['objective'] }), {
      status: 400,
      message: /^objective: "fewest" is not fewest-rules or least-privilege/,
    });
    await t.rejects(checkedSimulate(nfv, { objective: 'least-privilege', reconfigure: true }), {
      status: 400,
      message: /^objective: least-privilege does not apply to a reconfiguration/,
    });
  },
);

t.test('two ports to one server: a rule for each, where the fewest rules take both and more', async (t) => {
  const nfv = network(
    [
      webclient('10.0.0.1', '1.0.0.1'),
      webclient('10.0.0.2', '1.0.0.1'),
      place('1.0.0.1', '10.0.0.1', '10.0.0.2', '20.0.0.1'),
      webserver('20.0.0.1', '1.0.0.1'),
    ],
    [
      reachability('10.0.0.1', '20.0.0.1', { lv4Proto: 'TCP', dstPort: '80' }),
      reachability('10.0.0.1', '20.0.0.1', { lv4Proto: 'TCP', dstPort: '443' }),
      isolation('10.0.0.2', '20.0.0.1'),
    ],
  );
  const fewest = await checkedSimulate(structuredClone(nfv));
  t.equal(fewest.report.rules, 1);
  t.not(privilegeExcess(nfv, fewest.nfv).length, 0);
  const least = await checkedSimulate(structuredClone(nfv), { objective: 'least-privilege' });
  t.equal(least.report.optimal, true);
  t.same(
    rulesOf(least.nfv, '1.0.0.1')?.elements?.map(
      (r) => `${r.action} ${r.source} ${r.destination} ${r.protocol} ${r.dstPort}`,
    ),
    ['ALLOW 10.0.0.1 20.0.0.1 TCP 80', 'ALLOW 10.0.0.1 20.0.0.1 TCP 443'],
  );
  t.same(privilegeExcess(nfv, least.nfv), []);
});

async function answer(nfv: NFV, options: SimulateOptions): Promise<SimulationResult | string> {
  try {
    return await checkedSimulate(structuredClone(nfv), { timeoutSeconds: 600, ...options });
  } catch (e) {
    if (e instanceof NfvError) return `${e.status} ${e.message}`;
    throw e;
  }
}

const NETWORKS = 100;

t.test(`least privilege holds on ${NETWORKS} random networks, as many requirements held`, async (t) => {
  let checked = 0;
  let passing = 0;
  let proven = 0;
  let wider = 0;
  let perClass = 0;
  let allowGiven = 0;
  let fast = 0;
  for (let seed = 1; seed <= NETWORKS; seed++) {
    const nfv = withDecisions(seed);
    // On odd seeds, rule-less firewalls given DENY are given ALLOW: least privilege keeps a default given.
    for (const n of nfv.graphs.graph![0]!.node) {
      const fw = n.configuration?.firewall;
      if (seed % 2 === 1 && fw && !fw.elements?.length) fw.defaultAction = 'ALLOW';
    }
    const [fewest, least] = [await answer(nfv, {}), await answer(nfv, { objective: 'least-privilege' })];
    if (typeof fewest === 'string' || typeof least === 'string') {
      t.equal(least, fewest, `seed ${seed}: the same refusal`);
      continue;
    }
    checked++;
    const excess = privilegeExcess(nfv, least.nfv);
    for (const e of excess) t.fail(`seed ${seed}: firewall ${e.node} lets through ${e.box.join(',')}`);
    if (privilegeExcess(nfv, fewest.nfv).length > 0) wider++;
    const ruleless = (fw: { defaultAction?: string; elements?: unknown[] } | undefined) =>
      fw?.defaultAction === 'ALLOW' && !fw.elements?.length;
    if (nfv.graphs.graph![0]!.node.some((x) => ruleless(x.configuration?.firewall))) allowGiven++;
    // With almost no proof budget the answers not proven (the fast answer narrowed, the per-class count's lists) are
    // least privilege too.
    for (const proofWork of [100, 2_000]) {
      const hurried = await answer(nfv, { objective: 'least-privilege', proofWork });
      if (typeof hurried === 'string') {
        t.fail(`seed ${seed}: ${hurried}`);
        continue;
      }
      const fastOne = hurried.report.timings.components.some((c) => c.method === 'fast');
      if (fastOne) fast++;
      else if (!hurried.report.optimal) perClass++;
      t.equal(hurried.report.satisfied, least.report.satisfied, `seed ${seed}: as many hold without a proof`);
      for (const e of privilegeExcess(nfv, hurried.nfv))
        t.fail(`seed ${seed}, not proven: firewall ${e.node} lets through ${e.box.join(',')}`);
    }
    if (least.report.placements.some((p) => p.synthesised && p.rules > 0)) passing++;
    // Least privilege only narrows what passes: as many requirements can hold (which of equally many that conflict
    // hold is a tie either objective may break its own way).
    t.equal(least.report.satisfied, fewest.report.satisfied, `seed ${seed}: as many requirements hold`);
    if (!least.report.optimal || !fewest.report.optimal) continue;
    proven++;
    // The same firewalls still do; only the rules may grow.
    t.equal(least.report.allocated, fewest.report.allocated, `seed ${seed}: as many firewalls placed`);
    t.ok(least.report.rules >= fewest.report.rules, `seed ${seed}: no fewer rules than the fewest`);
  }
  t.ok(checked >= NETWORKS * 0.8, `${checked} answers checked`);
  t.ok(passing >= NETWORKS / 10, `${passing} of them with rules written`);
  t.ok(wider >= NETWORKS / 20, `${wider} whose fewest-rules answer lets through more`);
  t.ok(proven >= NETWORKS / 2, `${proven} proven both ways`);
  t.ok(allowGiven >= NETWORKS / 10, `${allowGiven} with a rule-less firewall given a default ALLOW`);
  t.ok(fast >= NETWORKS / 20, `${fast} of them with a fast answer made least privilege`);
  t.ok(perClass >= 1, `${perClass} with the per-class count's answer, not proven`);
});
