/** nfv simulate and nfv simulations through the binary. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { decodeDocument, encodeDocument } from '../../src/model/codec.js';
import { NfvType } from '../../src/model/resources.js';
import type { NFV } from '../../src/model/types.js';
import t from 'tap';
import { fixture, scratch } from '../helpers.js';
import { nfv } from './in-process.js';

const ws = await scratch(t);
const run = (args: string[], input?: string) => nfv(args, { workspace: ws, input });
const office = path.join('samples', 'office-nat.xml');

t.test('a document in, the result out in the same format, a summary on stderr', async (t) => {
  const r = await run(['simulate', office]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^<\?xml[\s\S]*<NFV>[\s\S]*functional_type="FIREWALL"/);
  t.match(r.stderr, /^SAT: 3\/3 requirements hold; 1 firewall \(1 placed\); 1 rule; [\d.]+ s\n$/);
  t.same(JSON.parse((await run(['simulations', 'list'])).stdout), [], 'nothing stored without --store');
});

t.test('the same input gives the same bytes', async (t) => {
  const a = await run(['simulate', path.join('samples', 'web-farm.xml')]);
  const b = await run(['simulate', path.join('samples', 'web-farm.xml')]);
  t.equal(a.stdout, b.stdout);
});

t.test('JSON in, JSON out; unsatisfiable requirements exit 1 with the reasons', async (t) => {
  const doc = decodeDocument<NFV>(NfvType, await readFile(office, 'utf8'));
  doc.propertyDefinition.property[1]!.src = '192.168.1.10';
  const r = await run(['simulate', '-'], encodeDocument(NfvType, doc, 'json'));
  t.equal(r.code, 1);
  t.doesNotThrow(() => JSON.parse(r.stdout));
  t.match(r.stderr, /^UNSAT: 2\/3 requirements hold/);
  t.match(
    r.stderr,
    /not enforceable: #[01] \w+ 192\.168\.1\.10 -> 198\.51\.100\.80: conflicts with requirement [01]\n/,
  );
});

t.test('--store, then the stored result, its report, and byParams', async (t) => {
  const stored = await run(['simulate', office, '--store']);
  t.equal(stored.code, 0);
  t.match(stored.stderr, /stored as \/adp\/simulations\/1/);
  const report = JSON.parse((await run(['simulations', 'report', '1'])).stdout);
  t.equal(report.verdict, 'SAT');
  const by = await run(['simulate', '--gid', '1', '--rid', '1']);
  t.equal(by.code, 0, by.stderr);
  t.same(JSON.parse(by.stdout).content, [2]);
  t.equal((await run(['simulations', 'delete', '2'])).code, 0);
  t.equal((await run(['simulations', 'get', '2'])).code, 3);
});

t.test(
  '--objective least-privilege: the HTTPS rule only, said on stderr; a bad value exits 2 naming the flag',
  async (t) => {
    const r = await run(['simulate', office, '--objective', 'least-privilege', '--format', 'json']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stderr, /^SAT: 3\/3 requirements hold; 1 firewall \(1 placed\); 1 rule \(least privilege\); [\d.]+ s\n$/);
    const fw = (JSON.parse(r.stdout) as NFV).graphs.graph![0]!.node.find((n) => n.name === '10.255.0.1');
    t.same(
      fw?.configuration?.firewall?.elements?.map((e) => `${e.destination} ${e.protocol} ${e.dstPort}`),
      ['198.51.100.80 TCP 443'],
    );
    const bad = await run(['simulate', office, '--objective', 'least']);
    t.equal(bad.code, 2);
    t.match(bad.stderr, /^nfv: option '--objective <name>' argument 'least' is invalid/);
  },
);

t.test(
  '--effort reaches the engine (the stored report says it); a bad value exits 2 in one line naming it',
  async (t) => {
    const stored = await run(['simulate', office, '--effort', '7', '--store']);
    t.equal(stored.code, 0, stored.stderr);
    const smid = /stored as \/adp\/simulations\/(\d+)/.exec(stored.stderr)![1]!;
    t.equal(JSON.parse((await run(['simulations', 'report', smid])).stdout).effort, 7);
    const plain = await run(['simulate', office, '--format', 'json']);
    t.equal(
      (await run(['simulate', office, '--effort', '1', '--format', 'json'])).stdout,
      plain.stdout,
      'effort 1 is the default',
    );
    const before = (await run(['simulations', 'list'])).stdout;
    for (const bad of ['0', '101', '2.5', 'x', '-1']) {
      const r = await run(['simulate', office, '--store', `--effort=${bad}`]);
      t.equal(r.code, 2, `--effort ${bad}`);
      t.match(r.stderr, /^nfv: effort: "[^"]*" is not a whole number from 1 to 100\n$/, `--effort ${bad}: one line`);
    }
    t.equal((await run(['simulations', 'list'])).stdout, before, 'nothing stored');
  },
);

t.test('bad input: exit 2 and one line', async (t) => {
  const r = await run(['simulate', '-'], await fixture('graphs.xml'));
  t.equal(r.code, 2);
  t.match(r.stderr, /^nfv: XML: expected a <NFV> document, got <graphs>\n$/);
});

t.test(
  'simulations reconfigure: new requirements against a stored result, the change, and its iptables script',
  async (t) => {
    const ws = await scratch(t);
    const runIn = (args: string[], input?: string) => nfv(args, { workspace: ws, input });
    t.equal((await runIn(['simulate', '--store', office])).code, 0);
    const wanted =
      '<PropertyDefinition>' +
      '<Property graph="0" name="ReachabilityProperty" src="192.168.1.10" dst="198.51.100.80"/>' +
      '<Property graph="0" name="ReachabilityProperty" src="192.168.1.11" dst="198.51.100.80"/>' +
      '<Property graph="0" name="IsolationProperty" src="198.51.100.66" dst="192.168.1.10"/>' +
      '</PropertyDefinition>';
    const r = await runIn(['simulations', 'reconfigure', '1', '-f', '-', '--format', 'json'], wanted);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stderr, /^SAT: 3\/3 requirements hold; .*; 1 rule change; [\d.]+ s\nstored as \/adp\/simulations\/2\n$/);
    const report = JSON.parse((await runIn(['simulations', 'report', '2'])).stdout);
    const changed = report.placements.find((p: { change?: unknown }) => p.change);
    t.same(changed.change.removed, [], 'nothing removed');
    t.equal(changed.change.added.length, 1, 'one rule added');
    const diff = await runIn(['simulations', 'diff', '1', '2', '--format', 'table']);
    t.match(
      diff.stdout,
      new RegExp(`firewall ${changed.node.replace(/\./g, '\\.')} reconfigured:\n  1 change: added #1`),
    );
    const script = await runIn(['deploy', 'iptables', '--from', '1', '2', changed.node]);
    t.equal(script.code, 0, script.stderr);
    t.match(script.stdout, /: 0 deleted, 1 inserted, policy DROP\n[\s\S]*\n-I FORWARD 2 .* -j ACCEPT\nCOMMIT\n$/);
    const ipfwScript = await runIn(['deploy', 'ipfw', '--from', '1', '2', changed.node]);
    t.match(ipfwScript.stdout, /: 0 deleted, 1 added;[^\n]*\ncmd="\/sbin\/ipfw -q"\n\$\{cmd\} add 50 allow /);
    const vendor = await runIn(['deploy', 'vendor', '--from', '1', '2', changed.node]);
    t.match(vendor.stdout, /: 0 deleted, 1 added;[\s\S]*\n {4}move 3 before 1\n/);
    const nft = await runIn(['deploy', 'nftables', '--from', '1', '2', changed.node]);
    t.equal(nft.code, 0, nft.stderr);
    t.match(nft.stdout, /^#!\/bin\/sh\n# nfv: firewall [\d.]+, simulation 1 -> 2: 0 deleted, 1 inserted, policy \w+\n/);
    t.match(nft.stdout, /\nnft -f - <<NFV\ninsert rule ip nfv forward position \$\{2\} .* accept\nNFV\n$/);
    const grouped = await runIn(['deploy', 'nftables', '--from', '1', '2', changed.node, '--sets']);
    t.equal(grouped.code, 0, grouped.stderr);
    t.match(
      grouped.stdout,
      /, simulation 1 -> 2: \d+ deleted, \d+ inserted, policy \w+\n# .*\n# chain forward, with --sets\)/,
    );
    const json = await runIn(['deploy', 'nftables', '--from', '1', '2', changed.node, '--format', 'json']);
    t.equal(json.code, 2, 'a change script has no JSON form');
    t.equal((await runIn(['deploy', 'iptables', '--from', '1', '2'])).code, 2, 'the node is required');
  },
);

t.test('a substrate: the hosting summary on stderr; infeasible exits 1 with the hosts as given', async (t) => {
  const centre = path.join('samples', 'data-centre.xml');
  const r = await run(['simulate', '--store', centre]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /^SAT: 7\/7 requirements hold; .*; hosting: 6 active hosts, total latency 28 \(optimal\); /);
  t.match(r.stdout, /<Host name="core1" [^>]*active="true"[^>]*>[\s\S]*?<NodeRef node="172\.16\.0\.1"\/>/);
  // The inputs just stored are the newest of each kind.
  const newest = async (target: string, ids: (content: never) => number[]) =>
    String(Math.max(...ids(JSON.parse((await run(['request', 'GET', target])).stdout).content[0])));
  const gid = await newest('/adp/graphs', (c: { graph: { id: number }[] }) => c.graph.map((g) => g.id));
  const rid = await newest('/adp/requirements', (c: { id: number }[]) => c.map((r) => r.id));
  const sid = await newest('/adp/substrates', (c: number[]) => c);
  const stored = await run(['simulate', '--gid', gid, '--rid', rid, '--sid', sid]);
  t.equal(stored.code, 0, stored.stderr);
  t.match(stored.stderr, /hosting: 6 active hosts, total latency 28 \(optimal\)/);
  const text = (await readFile(centre, 'utf8')).replaceAll('<SupportedVNF functional_type="LOADBALANCER"/>', '');
  const infeasible = await run(['simulate', '-'], text);
  t.equal(infeasible.code, 1);
  t.match(infeasible.stderr, /^SAT: .*hosting: INFEASIBLE: 10\.0\.0\.1 \(LOADBALANCER\) fits no host/);
  t.notMatch(infeasible.stdout, /active="true"|<NodeRef/, 'no partial placement');
});
