/** nfv simulate for a person: the verdict, each firewall's rules, each failed requirement's traffic and conflicts. */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { ROOT, SHARED, scratch } from '../helpers.js';
import { nfv } from './in-process.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './import-plain.part.js';
import './init.part.js';

const SAMPLE = path.join(ROOT, 'samples', 'office-nat.xml');

t.test('a satisfiable result: verdict, then each firewall with its default action and rules', async (t) => {
  const r = await nfv(['simulate', SAMPLE, '--format', 'table']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^SAT: 3\/3 requirements hold; 1 firewall \(1 placed\); 1 rule\n/);
  t.match(r.stdout, /firewall 10\.255\.0\.1 \(graph 0, placed here\): default DENY, 1 rule/);
  t.match(r.stdout, /│ 1 │ ALLOW\s+│ 192\.168\.1\.10 │/);
  t.notMatch(r.stdout, /<NFV>/, 'no result document on a terminal');
  // eslint-disable-next-line no-control-regex -- an ANSI escape is what must not appear
  t.notMatch(r.stdout, /\u001b\[/, 'no colour under NO_COLOR');
});

t.test('-o FILE writes the result document; piped output stays the document', async (t) => {
  const ws = await scratch(t);
  const file = path.join(ws, 'result.xml');
  const r = await nfv(['simulate', SAMPLE, '--format', 'table', '-o', file]);
  t.equal(r.code, 0);
  t.match(await readFile(file, 'utf8'), /^<\?xml[\s\S]*<NFV>/);
  t.match((await nfv(['simulate', SAMPLE])).stdout, /^<\?xml[\s\S]*<NFV>/, 'piped: the document in the input format');
  const json = path.join(ws, 'result.json');
  await nfv(['simulate', SAMPLE, '--format', 'json', '-o', json]);
  t.ok(JSON.parse(await readFile(json, 'utf8')).graphs);
});

const unsat = path.join(SHARED, 'verefoo-testfile', 'RegressioneTestCases', 'Test3_6.xml');
t.test(
  'requirements that cannot hold: their traffic, why, and what they conflict with',
  { skip: !existsSync(unsat) && 'no ../shared here' },
  async (t) => {
    const r = await nfv(['simulate', unsat, '--format', 'table']);
    t.equal(r.code, 1, 'UNSAT exits 1');
    t.match(r.stdout, /^UNSAT: 12\/16 requirements hold/);
    t.match(r.stdout, /4 requirements cannot hold:/);
    t.match(
      r.stdout,
      /│ 4 │ isolation\s+│ 40\.40\.41\.-1 │ 130\.10\.0\.1 │ any protocol │ conflicts with requirement 0\s+│ #0 /,
    );
  },
);

t.test('simulations list tells stored results apart; the report carries traffic and rules', async (t) => {
  const ws = await scratch(t);
  t.equal((await nfv(['simulate', '--store', SAMPLE], { workspace: ws })).code, 0);
  t.equal((await nfv(['simulate', '--store', path.join(ROOT, 'samples', 'web-farm.xml')], { workspace: ws })).code, 0);
  const rows = JSON.parse((await nfv(['simulations', 'list'], { workspace: ws })).stdout);
  t.match(rows, [
    {
      id: 1,
      verdict: 'SAT',
      held: 3,
      requirements: 3,
      firewalls: 1,
      placed: 1,
      rules: 1,
      algorithm: 'AP',
      origin: 'office-nat.xml',
    },
    { id: 2, verdict: 'SAT', held: 7, requirements: 7, origin: 'web-farm.xml' },
  ]);
  t.match(rows[0].created, /^\d{4}-\d\d-\d\dT/);
  t.type(rows[0].seconds, 'number');
  const table = (await nfv(['simulations', 'list', '--format', 'table'], { workspace: ws })).stdout;
  t.match(table, /│ 1\s+│ SAT\s+│ 3\/3\s+│ 1 \(1 placed\)\s+│ 1\s+│ AP\s+│ [\d.]+\s+│ \d{4}-[^│]+│ office-nat\.xml /);
  const report = JSON.parse((await nfv(['simulations', 'report', '1'], { workspace: ws })).stdout);
  t.match(
    report.requirements[0],
    { protocol: 'TCP', srcPort: '*', dstPort: '443' },
    'the port-443 requirement says so',
  );
  t.match(report.placements[0].elements, [{ action: 'ALLOW', source: '192.168.1.10' }]);
  t.match(report.run, { algorithm: 'AP', origin: 'office-nat.xml' });

  // The table says what the JSON says: each requirement's number and traffic, each firewall's rules.
  const shown = (await nfv(['simulations', 'report', '1', '--format', 'table'], { workspace: ws })).stdout;
  t.match(shown, /^simulation 1: SAT: 3\/3 requirements hold; 1 firewall \(1 placed\); 1 rule\n/);
  t.match(shown, /\nrun: AP in [\d.]+ s, \d{4}-[^,]+, from office-nat\.xml\ninputs: graph 1, requirement set 1\n/);
  t.match(shown, /│ #\s+│ requirement\s+│ from\s+│ to\s+│ protocol │ src port │ dst port │ holds │/);
  t.match(shown, /│ 0 │ reachability\s+│ 192\.168\.1\.10\s+│ 198\.51\.100\.80 │ TCP\s+│ \*\s+│ 443\s+│ yes\s+│/);
  t.match(shown, /│ 1 │ isolation\s+│ 192\.168\.1\.11\s+│ 198\.51\.100\.80 │ ANY\s+│ \*\s+│ \*\s+│ yes\s+│/);
  t.match(shown, /\nfirewall 10\.255\.0\.1 \(graph 0, placed here\): default DENY, 1 rule\n/);
  t.match(shown, /│ 1 │ ALLOW\s+│ 192\.168\.1\.10 │ \*\s+│ ANY\s+│ \*\s+│ \*\s+│/);
  t.equal(
    (await nfv(['request', 'GET', '/adp/simulations/1/report', '--format', 'table'], { workspace: ws })).stdout,
    shown,
    'the same table through nfv request',
  );
  const dc = await nfv(['simulate', '--store', path.join(ROOT, 'samples', 'data-centre.xml')], { workspace: ws });
  t.equal(dc.code, 0, dc.stderr);
  const hosted = (await nfv(['simulations', 'report', '3', '--format', 'table'], { workspace: ws })).stdout;
  t.match(hosted, /\ninputs: graph 3, requirement set 3, substrate 1\n/);
  t.match(hosted, /\nhosting: 6 active hosts, total latency 28 \(optimal\)\n/);
});

t.test('simulations report: a requirement that cannot hold says why and with what', async (t) => {
  const ws = await scratch(t);
  const file = path.join(ws, 'conflict.xml');
  await writeFile(
    file,
    (await readFile(SAMPLE, 'utf8')).replace(
      'name="IsolationProperty" src="192.168.1.11"',
      'name="IsolationProperty" src="192.168.1.10"',
    ),
  );
  t.equal((await nfv(['simulate', '--store', file], { workspace: ws })).code, 1);
  const shown = (await nfv(['simulations', 'report', '1', '--format', 'table'], { workspace: ws })).stdout;
  t.match(shown, /│ holds │ why it cannot hold\s+│ conflicts with │/);
  t.match(
    shown,
    /│ 0 │ reachability\s+│ 192\.168\.1\.10\s+│ 198\.51\.100\.80 │ TCP .*│ no\s+│ conflicts with requirement 1\s+│ #1 /,
  );
});

t.test('simulations diff: verdicts that changed, rules added and removed per firewall', async (t) => {
  const ws = await scratch(t);
  const swapped = (await readFile(SAMPLE, 'utf8'))
    .replace('name="ReachabilityProperty" src="192.168.1.10"', 'name="ReachabilityProperty" src="STAFF"')
    .replace('name="IsolationProperty" src="192.168.1.11"', 'name="IsolationProperty" src="192.168.1.10"')
    .replace('src="STAFF"', 'src="192.168.1.11"');
  const file = path.join(ws, 'guest-online.xml');
  await writeFile(file, swapped);
  t.equal((await nfv(['simulate', '--store', SAMPLE], { workspace: ws })).code, 0);
  t.equal((await nfv(['simulate', '--store', file], { workspace: ws })).code, 0);
  const diff = JSON.parse((await nfv(['simulations', 'diff', '1', '2'], { workspace: ws })).stdout);
  t.same(diff.rules, [
    {
      firewall: '10.255.0.1',
      added: ['ALLOW 192.168.1.11 -1.-1.-1.-1 ANY * *'],
      removed: ['ALLOW 192.168.1.10 -1.-1.-1.-1 ANY * *'],
    },
  ]);
  t.same(diff.firewalls, { added: [], removed: [] });
  t.match(diff.requirements, [
    { requirement: 'REACHABILITY_PROPERTY 192.168.1.10 -> 198.51.100.80 TCP * 443', from: true, to: null },
  ]);
  const table = (await nfv(['simulations', 'diff', '1', '2', '--format', 'table'], { workspace: ws })).stdout;
  t.match(table, /^simulation 1 -> 2\n/);
  t.match(table, 'rules of firewall 10.255.0.1:\n  + ALLOW 192.168.1.11 -1.-1.-1.-1 ANY * *\n  - ALLOW 192.168.1.10');
  t.equal(
    (await nfv(['simulations', 'diff', '1', '1', '--format', 'table'], { workspace: ws })).stdout,
    'simulation 1 -> 1\nno change\n',
  );
  t.equal((await nfv(['simulations', 'diff', '1', '9'], { workspace: ws })).code, 3);
  t.equal((await nfv(['simulations', 'diff', '1', ''], { workspace: ws })).code, 2);
});

t.test('simulations diff: a firewall that moved lists the rules it carried and carries', async (t) => {
  const ws = await scratch(t);
  // The office side of the NAT is a switch now, and the guest may browse: the firewall goes to the Internet side.
  const moved = (await readFile(SAMPLE, 'utf8'))
    .replace(
      '<node name="10.255.0.1">\n        <neighbour name="192.168.1.10"/>\n        <neighbour name="192.168.1.11"/>\n' +
        '        <neighbour name="203.0.113.1"/>\n',
      '<node name="10.255.0.1" functional_type="FORWARDER">\n        <neighbour name="192.168.1.10"/>\n' +
        '        <neighbour name="192.168.1.11"/>\n        <neighbour name="203.0.113.1"/>\n' +
        '        <configuration name="switch"><forwarder><name>Forwarder</name></forwarder></configuration>\n',
    )
    .replace(/ *<Property graph="0" name="IsolationProperty" src="192\.168\.1\.11"[^\n]*\n/, '');
  const file = path.join(ws, 'moved.xml');
  await writeFile(file, moved);
  t.equal((await nfv(['simulate', '--store', SAMPLE], { workspace: ws })).code, 0);
  t.equal((await nfv(['simulate', '--store', file], { workspace: ws })).code, 0);
  const diff = JSON.parse((await nfv(['simulations', 'diff', '1', '2'], { workspace: ws })).stdout);
  t.same(diff.firewalls, { added: ['10.255.0.2'], removed: ['10.255.0.1'] });
  t.same(diff.rules, [
    { firewall: '10.255.0.2', added: ['ALLOW 203.-1.-1.-1 -1.-1.-1.-1 ANY * *'], removed: [] },
    { firewall: '10.255.0.1', added: [], removed: ['ALLOW 192.168.1.10 -1.-1.-1.-1 ANY * *'] },
  ]);
  const table = (await nfv(['simulations', 'diff', '1', '2', '--format', 'table'], { workspace: ws })).stdout;
  t.match(
    table,
    'firewall 10.255.0.2 added, 1 rule:\n  + ALLOW 203.-1.-1.-1 -1.-1.-1.-1 ANY * *\n' +
      'firewall 10.255.0.1 removed, 1 rule:\n  - ALLOW 192.168.1.10 -1.-1.-1.-1 ANY * *\n',
  );
  t.notMatch(table, /rules of firewall/, 'each rule said once');
});
