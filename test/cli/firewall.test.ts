/**
 * `nfv firewall lint | allows | diff` through bin/nfv: files, stdin, stored /fwd nodes and simulation results as
 * rule sources; JSON when piped, tables with --format table; exit 1 for findings and differences; refusals as one
 * line naming the flag or argument, with exit 2 (3 for what does not exist).
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { fixture, scratch } from '../helpers.js';
import { nfv } from './in-process.js';

const ws = await scratch(t);
const run = (args: string[], input?: string) => nfv(args, { workspace: ws, input });
const FIXTURES = path.join('test', 'fixtures', 'batfish');
const ex = (name: string) => path.join(FIXTURES, `${name}.json`);

t.test('lint of files: Batfish examples as JSON and as a table', async (t) => {
  const r = await run(['firewall', 'lint', ex('1-ddos')]);
  t.equal(r.code, 1, 'findings: exit 1');
  t.equal(r.stderr, '');
  const report = JSON.parse(r.stdout);
  t.match(report, { firewall: `${ex('1-ddos')}, node 10.0.0.1`, rules: 257, defaultAction: 'DENY' });
  t.same(
    report.findings.map((f: { rule: { id: number }; finding: string; by: { id: number }[] }) => [
      f.rule.id,
      f.finding,
      f.by.map((b) => b.id),
    ]),
    [[3010, 'shadowed', [10, 3000]]],
  );
  const table = await run(['firewall', 'lint', ex('2-partial-overlaps'), '--format', 'table']);
  t.equal(table.code, 1);
  t.match(
    table.stdout,
    /^test\/fixtures\/batfish\/2-partial-overlaps\.json, node 10\.0\.0\.2: 3 rules, default DENY; 2 findings\n/,
  );
  t.match(
    table.stdout,
    /│ 10 +│ ALLOW TCP \* -> 1\.2\.3\.-1 dport 0-32767 +│ redundant +│ without it, 30 decides its packets alike/,
  );
  t.match(table.stdout, /│ 30 +│ ALLOW TCP \* -> 1\.2\.3\.-1 +│ shadowed +│ blocked by 10, 20 \(another action\)/);
  const stdin = await run(['firewall', 'lint', '-'], await fixture('batfish/3-multiple-blockers.json'));
  t.equal(stdin.code, 1);
  t.equal(JSON.parse(stdin.stdout).firewall, 'standard input, node 10.0.0.3');
  const piped = await run(['firewall', 'lint'], await fixture('batfish/3-multiple-blockers.json'));
  t.equal(JSON.parse(piped.stdout).findings.length, 2, 'a document piped without an argument');
  const clean = path.join(await scratch(t), 'clean.json');
  await writeFile(
    clean,
    JSON.stringify({
      name: '30.0.0.1',
      functionalType: 'FIREWALL',
      configuration: {
        name: 'c',
        firewall: { defaultAction: 'DENY', elements: [{ action: 'ALLOW', source: '*', destination: '20.0.0.1' }] },
      },
    }),
  );
  const none = await run(['firewall', 'lint', clean, '--format', 'table']);
  t.equal(none.code, 0, 'nothing found: exit 0');
  t.equal(none.stdout, `${clean}, node 30.0.0.1: 1 rule, default DENY; no findings\n`);
});

t.test('an NFV document in XML: its only firewall', async (t) => {
  const r = await run(['firewall', 'allows', path.join('samples', 'web-farm.xml')]);
  t.equal(r.code, 0, r.stderr);
  t.same(JSON.parse(r.stdout), {
    firewall: 'samples/web-farm.xml, node 10.0.3.1',
    rules: 1,
    defaultAction: 'DENY',
    within: { source: '*', destination: '*', protocol: 'ANY', srcPort: '*', dstPort: '*' },
    classes: [
      {
        source: '10.0.1.0/24',
        destination: '10.0.2.1',
        protocol: 'TCP',
        srcPort: '*',
        dstPort: '5432',
        rules: [{ position: 1 }],
      },
    ],
  });
  const named = await run(['firewall', 'lint', path.join('samples', 'web-farm.xml'), '--node', '10.0.3.1']);
  t.equal(named.code, 0, 'no findings');
});

t.test('stored sources: /fwd nodes and simulation results', async (t) => {
  t.equal((await run(['simulate', '--store', path.join('samples', 'office-nat.xml')])).code, 0);
  t.equal((await run(['fwd', 'import', '--simulation', '1'])).code, 0);
  const lint = await run(['firewall', 'lint', '--fwd', '1', '--format', 'table']);
  t.equal(lint.code, 0, lint.stderr);
  t.equal(lint.stdout, 'fwd node 1 (10.255.0.1): 1 rule, default DENY; no findings\n');
  const allows = await run(['firewall', 'allows', 'fwd:1', '--format', 'table']);
  t.equal(allows.code, 0);
  t.match(allows.stdout, /allows 1 class of packets\n/);
  t.match(allows.stdout, /│ 192\.168\.1\.10 │ \* +│ ANY +│ \* +│ \* +│ 1 +│/);
  const tcp = await run([
    'firewall',
    'allows',
    '--simulation',
    '1',
    '--node',
    '10.255.0.1',
    '--proto',
    'udp',
    '--dport',
    '53',
  ]);
  t.equal(tcp.code, 0, tcp.stderr);
  t.same(JSON.parse(tcp.stdout).classes, [
    {
      source: '192.168.1.10',
      destination: '*',
      protocol: 'UDP',
      srcPort: '*',
      dstPort: '53',
      rules: [{ position: 1 }],
    },
  ]);
  const nothing = await run(['firewall', 'allows', 'fwd:1', '--src', '10.0.0.1', '--format', 'table']);
  t.match(nothing.stdout, /default DENY; allows nothing of ANY 10\.0\.0\.1:\* -> \*:\*\n$/);
  // The same rules stored twice: no difference; one rule changed: the packets it decides now.
  t.equal((await run(['fwd', 'import', '--simulation', '1'])).code, 0);
  const same = await run(['firewall', 'diff', 'fwd:1', 'fwd:2', '--format', 'table']);
  t.equal(same.code, 0);
  t.match(same.stdout, /equivalent: every packet gets the same verdict from both\n$/);
  const eid = JSON.parse((await run(['fwd', 'nodes', 'get', '2'])).stdout).configuration.firewall.elements[0].id;
  const update = await run(
    ['fwd', 'rules', 'update', '2', String(eid)],
    '{"action":"ALLOW","source":"192.168.1.10","destination":"198.51.100.80","protocol":"TCP","dstPort":"443"}',
  );
  t.equal(update.code, 0, update.stderr);
  const changed = await run(['firewall', 'diff', 'fwd:1', 'fwd:2']);
  t.equal(changed.code, 1, 'the lists differ: exit 1');
  const d = JSON.parse(changed.stdout);
  t.match(d, { from: 'fwd node 1 (10.255.0.1)', to: 'fwd node 2 (10.255.0.1)', equivalent: false });
  t.ok(
    d.classes.every(
      (c: { source: string; from: { verdict: string }; to: { verdict: string } }) =>
        c.source === '192.168.1.10' && c.from.verdict === 'ALLOW' && c.to.verdict === 'DENY',
    ),
  );
  const table = await run(['firewall', 'diff', 'fwd:1', 'fwd:2', '--format', 'table']);
  t.match(
    table.stdout,
    /^A: fwd node 1 \(10\.255\.0\.1\)\nB: fwd node 2 \(10\.255\.0\.1\)\n\d+ classes of packets treated differently\n/,
  );
  t.match(table.stdout, /│ ALLOW \(1\) │ DENY \(default\) │/);
  // Across kinds: the stored result's firewall against the /fwd node made from it.
  const across = await run(['firewall', 'diff', 'simulation:1', 'fwd:1', '--node', '10.255.0.1']);
  t.equal(across.code, 0, across.stderr);
  t.equal(JSON.parse(across.stdout).equivalent, true);
  const twice = await run([
    'firewall',
    'diff',
    'simulation:1',
    'simulation:1',
    '--node',
    '10.255.0.1',
    '--node',
    '10.255.0.1',
  ]);
  t.equal(twice.code, 0, twice.stderr);
});

t.test('refusals name the flag or argument', async (t) => {
  const refused = async (args: string[], code: number, message: RegExp, input?: string) => {
    const r = await run(args, input);
    t.equal(r.code, code, `${args.join(' ')}: exit ${code}`);
    t.match(r.stderr, message, args.join(' '));
    t.equal(r.stderr.split('\n').length, 2, 'one line');
    t.equal(r.stdout, '');
  };
  await refused(['firewall', 'lint'], 2, /^nfv: no rule source: give FILE/);
  await refused(
    ['firewall', 'lint', ex('1-ddos'), '--fwd', '1'],
    2,
    /^nfv: give one rule source: SOURCE, --fwd NID or --simulation SMID\n/,
  );
  await refused(['firewall', 'lint', '--fwd', '99'], 3, /^nfv: firewall node 99 does not exist\n/);
  await refused(['firewall', 'lint', '--fwd', 'x'], 2, /^nfv: --fwd: "x" is not an id/);
  await refused(['firewall', 'lint', 'fwd:1', '--node', 'a'], 2, /^nfv: --node: fwd:1 is one firewall node already\n/);
  await refused(['firewall', 'lint', 'nope.json'], 2, /^nfv: cannot read nope\.json: no such file or folder\n/);
  await refused(['firewall', 'lint', '--simulation', '7'], 3, /^nfv: simulation 7 does not exist\n/);
  await refused(
    ['firewall', 'lint', path.join('samples', 'office-nat.xml')],
    2,
    /^nfv: node: samples\/office-nat\.xml has no FIREWALL node\n/,
  );
  await refused(
    ['firewall', 'allows', 'fwd:1', '--proto', 'icmp'],
    2,
    /^nfv: proto: "icmp" is not a protocol \(ANY, TCP, UDP, OTHER\)\n/,
  );
  await refused(['firewall', 'allows', 'fwd:1', '--dport', '1-2-3'], 2, /^nfv: dport: "1-2-3" is not a port range/);
  await refused(
    ['firewall', 'allows', 'fwd:1', '--format', 'xml'],
    2,
    /^nfv: --format xml: this command answers in JSON \(or a table\)\n/,
  );
  await refused(['firewall', 'diff', 'fwd:1'], 2, /^nfv: missing required argument 'b'/);
  await refused(
    ['firewall', 'diff', 'fwd:1', 'fwd:2', '--node', 'a'],
    2,
    /^nfv: --node "a": fwd:1 and fwd:2 are firewall nodes already\n/,
  );
  await refused(
    ['firewall', 'diff', 'fwd:1', 'fwd:2', '--node', 'a', '--node', 'b', '--node', 'c'],
    2,
    /^nfv: --node: given 3 times/,
  );
  await refused(
    ['firewall', 'diff', 'fwd:1', 'simulation:1', '--node', 'a', '--node', '10.255.0.1'],
    2,
    /^nfv: --node: fwd:1 is one firewall node already\n/,
  );
  await refused(
    ['firewall', 'diff', 'fwd:1', 'simulation:1', '--node', '9.9.9.9'],
    3,
    /^nfv: node: simulation 1 has no node "9\.9\.9\.9"\n/,
  );
});
