/**
 * `POST /fwd/import` into an NFV document, then `simulate` (firewall-io.md B.5, B.10.4): an exact import gives the
 * verdicts of the same rules written as nfv elements; an approximated one carries its may and must lists in one
 * (`approximation` on the rules of one list only) and each requirement is held, failed or unknown, unknown naming
 * the approximated line; reconfiguring it is refused with the line named; deploying it too.
 */
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { diff, listOfNode } from '../../src/deploy/analysis/index.js';
import { importRules, importedList } from '../../src/deploy/import/index.js';
import { simulationsRun } from '../../src/ops/network/simulations.js';
import { invoke } from '../../src/ops/operation.js';
import { fwdImport } from '../../src/ops/imports.js';
import type { NFV } from '../../src/model/types.js';
import { scratch } from '../helpers.js';
import { call, content, ok, workspace } from './call.js';

/** Three clients behind the firewall 10.255.0.1 in front of a web server, and the requirements on them. */
function network(properties: [string, string, string][], rules: object[] = []): string {
  const clients = ['10.0.1.1', '10.0.2.1', '10.0.3.1'];
  const nfv = {
    graphs: {
      graph: [
        {
          id: 0,
          node: [
            ...clients.map((name) => ({
              name,
              functionalType: 'WEBCLIENT',
              neighbour: [{ name: '10.255.0.1' }],
              configuration: { name: 'c', webclient: { nameWebServer: '10.0.9.1' } },
            })),
            {
              name: '10.255.0.1',
              functionalType: 'FIREWALL',
              neighbour: [...clients, '10.0.9.1'].map((name) => ({ name })),
              configuration: { name: 'fw', firewall: { defaultAction: 'DENY', elements: rules } },
            },
            {
              name: '10.0.9.1',
              functionalType: 'WEBSERVER',
              neighbour: [{ name: '10.255.0.1' }],
              configuration: { name: 's', webserver: { name: '10.0.9.1' } },
            },
          ],
        },
      ],
    },
    propertyDefinition: {
      property: properties.map(([name, src, port]) => ({
        name,
        graph: 0,
        src,
        dst: '10.0.9.1',
        lv4Proto: 'TCP',
        dstPort: port,
      })),
    },
  };
  return JSON.stringify(nfv);
}

const RULES = (extra: string) =>
  [
    '*filter',
    ':FORWARD DROP [0:0]',
    '-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
    '-A FORWARD -s 10.0.1.0/24 -p tcp --dport 80 -j ACCEPT',
    extra,
    '-A FORWARD -s 10.0.3.0/24 -d 10.0.9.0/28 -p tcp -m multiport --dports 22,80 -j ACCEPT',
    'COMMIT',
    '',
  ].join('\n');

const REQUIREMENTS: [string, string, string][] = [
  ['REACHABILITY_PROPERTY', '10.0.1.1', '80'],
  ['ISOLATION_PROPERTY', '10.0.1.1', '22'],
  ['REACHABILITY_PROPERTY', '10.0.2.1', '80'],
  ['ISOLATION_PROPERTY', '10.0.2.1', '443'],
  ['REACHABILITY_PROPERTY', '10.0.3.1', '22'],
  ['ISOLATION_PROPERTY', '10.0.3.1', '80'],
];

async function importInto(t: Tap.Test, text: string, into: string) {
  const ws = await workspace(t);
  const body = JSON.stringify({ format: 'iptables', text, file: 'rules.v4', node: '10.255.0.1', into });
  const o = await invoke(fwdImport, ws, { body, format: 'json' });
  if (!o.ok) throw new Error(o.error);
  return { ws, answer: o.reply.value };
}

async function simulate(t: Tap.Test, ws: Awaited<ReturnType<typeof workspace>>, doc: string, reconfigure = false) {
  const query = new URLSearchParams({ store: 'false', ...(reconfigure ? { reconfigure: 'true' } : {}) });
  return invoke(simulationsRun, ws, { body: doc, format: 'json', query });
}

t.test('an exact import verifies as the same rules written by hand', async (t) => {
  const { ws, answer } = await importInto(
    t,
    RULES('-A FORWARD -s 10.0.2.0/24 -p tcp --dport 443 -j DROP'),
    network(REQUIREMENTS),
  );
  t.equal(answer.report.approximated, false);
  const imported = await simulate(t, ws, answer.document!);
  const byHand = await simulate(
    t,
    ws,
    network(REQUIREMENTS, [
      { action: 'ALLOW', source: '10.0.1.0/24', destination: '*', protocol: 'TCP', dstPort: '80' },
      { action: 'DENY', source: '10.0.2.0/24', destination: '*', protocol: 'TCP', dstPort: '443' },
      { action: 'ALLOW', source: '10.0.3.0/24', destination: '10.0.9.0/28', protocol: 'TCP', dstPort: '22' },
      { action: 'ALLOW', source: '10.0.3.0/24', destination: '10.0.9.0/28', protocol: 'TCP', dstPort: '80' },
    ]),
  );
  if (!imported.ok || !byHand.ok) return t.fail('both simulate');
  const verdicts = (r: typeof imported.reply.report) => r.requirements.map((q) => q.isSat);
  t.same(verdicts(imported.reply.report), [true, true, false, true, true, false], 'held and failed as the rules say');
  t.same(verdicts(imported.reply.report), verdicts(byHand.reply.report), 'the same verdicts as the hand-written rules');
  t.notOk(imported.reply.report.unknown, 'nothing unknown');
});

t.test('an approximated import: held, failed or unknown, unknown naming the line', async (t) => {
  const limited = '-A FORWARD -s 10.0.2.0/24 -p tcp -m limit --limit 5/min -j ACCEPT';
  const { ws, answer } = await importInto(t, RULES(limited), network(REQUIREMENTS));
  t.equal(answer.report.approximated, true);
  const nfv = JSON.parse(answer.document!) as NFV;
  const rules = nfv.graphs.graph![0]!.node.find((n) => n.name === '10.255.0.1')!.configuration!.firewall!.elements!;
  t.same(
    rules.filter((e) => e.approximation).map((e) => [e.approximation, e.origin, e.source]),
    [['may', 'rules.v4:5', '10.0.2.0/24']],
    'the maybe accept is a rule of the may list only, with its line',
  );
  t.ok(
    rules.every((e) => e.origin?.startsWith('rules.v4:')),
    'every rule names its live line',
  );
  const o = await simulate(t, ws, answer.document!);
  if (!o.ok) return t.fail(o.error);
  const { report, summary } = o.reply;
  t.same(
    report.requirements.map((q) => (q.unknown ? 'unknown' : q.isSat)),
    [true, true, 'unknown', 'unknown', true, false],
    '10.0.2.1 depends on the rate limit: unknown both ways; the rest held or failed',
  );
  const unknown = report.requirements.filter((q) => q.unknown);
  t.same(
    unknown.map((q) => q.unknown),
    [['rules.v4:5'], ['rules.v4:5']],
    'unknown names the approximated line',
  );
  t.match(
    unknown[0]!.reason,
    /holds with the may list and fails with the must list; the approximated lines rules\.v4:5/,
  );
  t.equal(report.verdict, 'UNSAT', 'unknown is never reported as held');
  t.match(summary, /^3\/6 requirements hold; 2 unknown \(approximated firewall rules decide them\);/);
  const result = o.reply.content[0]!;
  t.same(
    result.propertyDefinition.property.map((p) => p.isSat),
    [true, true, false, false, true, false],
    'isSat false for unknown in the result document',
  );
  const fw = result.graphs.graph![0]!.node.find((n) => n.name === '10.255.0.1')!;
  t.same(fw.configuration!.firewall!.elements, rules, 'the answer keeps both lists as given');

  const again = await simulate(t, ws, answer.document!, true);
  t.notOk(again.ok, 'reconfiguring an approximated import is refused');
  if (!again.ok) {
    t.equal(again.status, 400);
    t.match(
      again.error,
      /firewall 10\.255\.0\.1 has approximated rules \(rules\.v4:5\): only exact imports are reconfigured/,
    );
  }
});

// ---------------------------------------------------------------------------------------------------------------
// Reconfiguring an imported firewall, the change written against the live file (B.8, B.10.5)

const NAMESPACES = ['-rnp', '--fork', '--kill-child'];
const kernelWhy =
  spawnSync('unshare', [...NAMESPACES, 'iptables', '-S', 'FORWARD'], { encoding: 'utf8' }).status === 0
    ? ''
    : 'iptables in a namespace is not available here';
if (process.env.CI === 'true' && kernelWhy) t.fail(`${kernelWhy}; .ci/run must provide it`);

const LIVE = [
  '# Generated by iptables-save v1.8.9',
  '*filter',
  ':INPUT ACCEPT [0:0]',
  ':FORWARD DROP [0:0]',
  ':OUTPUT ACCEPT [0:0]',
  ':web - [0:0]',
  '-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
  '-A FORWARD -m conntrack --ctstate INVALID -j DROP',
  '-A FORWARD -d 10.0.9.0/28 -j web',
  '-A FORWARD -s 10.0.2.0/24 -p tcp --dport 443 -j ACCEPT',
  '-A web -s 10.0.1.0/24 -p tcp --dport 80 -j ACCEPT',
  '-A web -s 10.0.3.0/24 -p tcp --dport 22 -j ACCEPT',
  'COMMIT',
  '',
].join('\n');

t.test('a reconfigured import: the change against the live lines, applied by iptables-restore', async (t) => {
  const before: [string, string, string][] = [
    ['REACHABILITY_PROPERTY', '10.0.1.1', '80'],
    ['REACHABILITY_PROPERTY', '10.0.3.1', '22'],
  ];
  const { ws, answer } = await importInto(t, LIVE, network(before));
  const query = new URLSearchParams({ store: 'true' });
  const verified = await invoke(simulationsRun, ws, { body: answer.document!, format: 'json', query });
  if (!verified.ok) return t.fail(verified.error);
  t.equal(verified.reply.report.verdict, 'SAT', 'simulation 1: the live firewall verified');
  // Now 10.0.2.1 must not reach 443 (the live line 10 goes) and must reach 80 (a new rule).
  const wanted = {
    property: [
      ...before.map(([name, src, port]) => ({ name, graph: 0, src, dst: '10.0.9.1', lv4Proto: 'TCP', dstPort: port })),
      { name: 'ISOLATION_PROPERTY', graph: 0, src: '10.0.2.1', dst: '10.0.9.1', lv4Proto: 'TCP', dstPort: '443' },
      { name: 'REACHABILITY_PROPERTY', graph: 0, src: '10.0.2.1', dst: '10.0.9.1', lv4Proto: 'TCP', dstPort: '80' },
    ],
  };
  const next = await call(ws, 'POST', '/adp/simulations/1/reconfigure', wanted);
  if (!next.ok) return t.fail(next.error);
  t.match(next.reply, { headers: { 'X-Nfv-Summary': /^4\/4 requirements hold; / } }, 'simulation 2: reconfigured');
  const body = { format: 'iptables', text: LIVE, file: 'rules.v4', node: '10.255.0.1' };
  const script = await call(ws, 'POST', '/adp/simulations/1/change/2', body);
  if (!script.ok) return t.fail(script.error);
  const text = content(script) as string;
  t.match(
    text,
    /^# nfv: firewall 10\.255\.0\.1, simulation 1 -> 2 against rules\.v4: 1 line deleted, \d+ rules? inserted at FORWARD 3,/,
  );
  t.match(text, /# {3}deleted rules\.v4:10: -A FORWARD -s 10\.0\.2\.0\/24 -p tcp --dport 443 -j ACCEPT\n/);
  t.match(
    text,
    /\n\*filter\n-D FORWARD 4\n-I FORWARD 3 .*-j ACCEPT\n/,
    'deleted by position, new rules below the conntrack lines',
  );

  // Drifted or other files are refused, naming what differs.
  const drifted = { ...body, text: LIVE.replace('--dport 22', '--dport 2222') };
  const refusal = await call(ws, 'POST', '/adp/simulations/1/change/2', drifted);
  t.match(refusal, { ok: false, status: 400 });
  if (!refusal.ok)
    t.match(refusal.error, /^--live rules\.v4: not the firewall 10\.255\.0\.1 of simulation 1 \(its rule 2 is/);

  if (kernelWhy) return t.comment(`the kernel check skipped: ${kernelWhy}`);
  // The real iptables-restore applies it to the live file; listed back and imported, it is the reconfigured list.
  const dir = await scratch(t);
  await writeFile(path.join(dir, 'rules.v4'), LIVE);
  await writeFile(path.join(dir, 'change.rules'), text);
  const run = spawnSync(
    'unshare',
    [
      ...NAMESPACES,
      'sh',
      '-c',
      'iptables-restore < rules.v4 && iptables-restore --noflush < change.rules && iptables-save',
    ],
    { cwd: dir, encoding: 'utf8' },
  );
  t.equal(run.status, 0, `iptables-restore --noflush takes it${run.stderr ? `: ${run.stderr}` : ''}`);
  const saved = importRules('iptables', run.stdout, 'saved');
  const result = await ok(t, ws, 'GET', '/adp/simulations/2');
  const node = (result[0] as NFV).graphs.graph![0]!.node.find((n) => n.name === '10.255.0.1')!;
  t.ok(
    diff(importedList(saved), listOfNode(node, 'reconfigured')).equivalent,
    'the live firewall is the reconfigured one',
  );
  const lines = run.stdout.split('\n').filter((l) => l.startsWith('-A FORWARD'));
  t.match(lines.slice(0, 2), [/ESTABLISHED/, /INVALID/], 'nothing new above the conntrack lines');
});
