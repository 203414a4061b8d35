/**
 * Host firewalls (issue 47 item 4): a host's own dump (INPUT and OUTPUT, FORWARD empty) imported with `host` into a
 * graph puts a FIREWALL node between that end host and its neighbours, whose verdicts are the host's: INPUT for the
 * packets to it, OUTPUT for the packets from it. The engine's verdicts are checked by the path-free evaluator
 * (test/engine), which shares no code with the engine, both ways: what it claims held holds, what it claims failed
 * fails. A bad `host` (no node of the graph, not an end host, not an address) is refused naming the flag, on the
 * command line with exit 2. The same rules as nft input/output hooks give the same node; `firewall explain --host`
 * walks INPUT or OUTPUT by the packet.
 */
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { diff, listOfNode } from '../../src/deploy/analysis/index.js';
import { decodeDocument } from '../../src/model/codec.js';
import { NfvType } from '../../src/model/resources.js';
import type { NFV } from '../../src/model/types.js';
import { fwdImport } from '../../src/ops/imports.js';
import { invoke } from '../../src/ops/operation.js';
import { checkedSimulate } from '../engine/evaluator.js';
import { verdicts } from '../engine/evaluator-pathfree.js';
import { cli, scratch } from '../helpers.js';
import { call, content, workspace } from './call.js';

const SERVER = '10.0.9.1';
const FW = '10.0.9.254';

/** A client of each subnet, a router, the server; the requirements `[type, src, dst, port]`. */
function network(properties: [string, string, string, string][]): string {
  const clients = ['10.0.1.1', '10.0.2.1'];
  const nfv = {
    graphs: {
      graph: [
        {
          id: 0,
          node: [
            ...clients.map((name) => ({
              name,
              functionalType: 'WEBCLIENT',
              neighbour: [{ name: '10.0.0.254' }],
              configuration: { name: 'c', webclient: { nameWebServer: SERVER } },
            })),
            {
              name: '10.0.0.254',
              functionalType: 'FORWARDER',
              neighbour: [...clients, SERVER].map((name) => ({ name })),
              configuration: { name: 'r', forwarder: { name: 'R' } },
            },
            {
              name: SERVER,
              functionalType: 'WEBSERVER',
              neighbour: [{ name: '10.0.0.254' }],
              configuration: { name: 's', webserver: { name: SERVER } },
            },
          ],
        },
      ],
    },
    propertyDefinition: {
      property: properties.map(([name, src, dst, port]) => ({
        name,
        graph: 0,
        src,
        dst,
        lv4Proto: 'TCP',
        dstPort: port,
      })),
    },
  };
  return JSON.stringify(nfv);
}

/** The server's own iptables-save: ssh from 10.0.1.0/24 only, web from anywhere; nothing out to 10.0.2.0/24. */
const HOST_DUMP = [
  '*filter',
  ':INPUT DROP [0:0]',
  ':FORWARD DROP [0:0]',
  ':OUTPUT ACCEPT [0:0]',
  '-A INPUT -i lo -j ACCEPT',
  '-A INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
  '-A INPUT -s 10.0.1.0/24 -p tcp --dport 22 -j ACCEPT',
  '-A INPUT -p tcp -m multiport --dports 80,443 -j ACCEPT',
  '-A OUTPUT -d 10.0.2.0/24 -j DROP',
  'COMMIT',
  '',
].join('\n');

const REQUIREMENTS: [string, string, string, string][] = [
  ['REACHABILITY_PROPERTY', '10.0.1.1', SERVER, '22'],
  ['REACHABILITY_PROPERTY', '10.0.2.1', SERVER, '22'],
  ['ISOLATION_PROPERTY', '10.0.2.1', SERVER, '22'],
  ['REACHABILITY_PROPERTY', '10.0.2.1', SERVER, '443'],
  ['REACHABILITY_PROPERTY', SERVER, '10.0.1.1', '8080'],
  ['REACHABILITY_PROPERTY', SERVER, '10.0.2.1', '8080'],
];

async function importHost(t: Tap.Test, body: Record<string, unknown>) {
  const ws = await workspace(t);
  const o = await invoke(fwdImport, ws, {
    body: JSON.stringify({ format: 'iptables', text: HOST_DUMP, file: 'server.v4', node: FW, ...body }),
    format: 'json',
  });
  return o;
}

t.test('a host dump with host: the node goes in front of the server and decides as its chains', async (t) => {
  const o = await importHost(t, { host: SERVER, into: network(REQUIREMENTS) });
  if (!o.ok) return t.fail(o.error);
  const { report, document } = o.reply.value;
  t.equal(report.chain, `filter/INPUT to ${SERVER}, filter/OUTPUT from ${SERVER}`);
  t.equal(report.approximated, false, 'nothing approximated');
  t.same(
    report.lines.map((l) => l.class),
    ['exact', 'new-connection', 'exact', 'exact', 'exact'],
    'every INPUT and OUTPUT line reached',
  );
  const nfv = decodeDocument(NfvType, document!) as NFV;
  const nodes = new Map(nfv.graphs.graph![0]!.node.map((n) => [n.name, n]));
  const names = (name: string) => (nodes.get(name)!.neighbour ?? []).map((n) => n.name);
  t.same(names(SERVER), [FW], 'the server is linked to its firewall only');
  t.same(names(FW), [SERVER, '10.0.0.254'], 'the firewall to the server and its former neighbour');
  t.same(names('10.0.0.254'), ['10.0.1.1', '10.0.2.1', FW], 'the router to the firewall instead of the server');

  const result = await checkedSimulate(nfv);
  const claimed = result.report.requirements.map((q) => q.isSat);
  t.same(claimed, [true, false, true, true, true, false], 'INPUT admits ssh from 10.0.1.0/24 only, OUTPUT drops');
  t.same(
    verdicts(result.nfv).map((v) => v.holds),
    claimed,
    'the independent evaluator finds the same verdicts, held and failed',
  );

  // Imported again into its own output: the node is kept where it is, its rules replaced.
  const again = await importHost(t, { host: SERVER, into: document });
  if (!again.ok) return t.fail(again.error);
  t.equal(again.reply.value.document, document, 'a second import changes nothing');
});

t.test('a bad host is refused naming the field, and the flag', async (t) => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ host: '10.0.7.7', into: network(REQUIREMENTS) }, /^host: "10\.0\.7\.7" is not a node .*\(--host\)/],
    [{ host: '10.0.0.254', into: network(REQUIREMENTS) }, /^host: "10\.0\.0\.254" is a FORWARDER, not an end host/],
    [{ host: '10.0.9.0/24' }, /^host: "10\.0\.9\.0\/24" is not an IPv4 address \(--host/],
    [{ host: SERVER, chain: 'INPUT' }, /^chain: --chain INPUT and --host 10\.0\.9\.1/],
  ];
  for (const [body, message] of cases) {
    const o = await importHost(t, body);
    t.notOk(o.ok, JSON.stringify(body.host));
    if (!o.ok) {
      t.equal(o.status, 400);
      t.match(o.error, message);
    }
  }
  const dir = await scratch(t);
  const rules = path.join(dir, 'server.v4');
  const doc = path.join(dir, 'net.json');
  await writeFile(rules, HOST_DUMP);
  await writeFile(doc, network(REQUIREMENTS));
  for (const [host, message] of [
    ['10.0.7.7', /is not a node of the document's graphs \(--host\)/],
    ['10.0.1.1/32', /is not an IPv4 address \(--host/],
  ] as const) {
    const r = await cli(['import', 'iptables', rules, '--node', FW, '--host', host, '--into', doc], {
      workspace: dir,
    });
    t.equal(r.code, 2, `--host ${host}: exit 2`);
    t.match(r.stderr, message);
    t.notMatch(r.stderr, /\n\s+at /, 'no stack trace');
    t.equal(r.stdout, '', 'nothing on stdout');
  }
  const good = await cli(['import', 'iptables', rules, '--node', FW, '--host', SERVER, '--into', doc], {
    workspace: dir,
  });
  t.equal(good.code, 0, good.stderr);
  t.match(
    good.stderr,
    /filter\/INPUT to 10\.0\.9\.1, filter\/OUTPUT from 10\.0\.9\.1, 5 lines reached \(4 exact, 1 new-connection\)/,
  );
});

/** The same host firewall as nft text (converted by nft itself in a namespace, as `nfv import` does). */
const HOST_NFT = `table inet filter {
  chain input {
    type filter hook input priority 0; policy drop;
    iifname "lo" accept
    ct state established,related accept
    ip saddr 10.0.1.0/24 tcp dport 22 accept
    tcp dport { 80, 443 } accept
  }
  chain output {
    type filter hook output priority 0; policy accept;
    ip daddr 10.0.2.0/24 drop
  }
}
`;
const nftWhy =
  spawnSync('unshare', ['-rn', 'nft', '-c', '-f', '-'], { input: HOST_NFT, encoding: 'utf8' }).status === 0
    ? ''
    : 'nft in a namespace is not available here';
if (process.env.CI === 'true' && nftWhy) t.fail(`${nftWhy}; .ci/run must provide it`);

t.test(
  'nft: the input and output hooks give the same node as the iptables dump',
  { skip: nftWhy || false },
  async (t) => {
    const ws = await workspace(t);
    const nodeOf = async (format: string, text: string) => {
      const body = JSON.stringify({ format, text, file: `server.${format}`, node: FW, host: SERVER });
      const o = await invoke(fwdImport, ws, { body, format: 'json' });
      if (!o.ok) throw new Error(o.error);
      return o.reply.value;
    };
    const [ipt, nft] = [await nodeOf('iptables', HOST_DUMP), await nodeOf('nftables', HOST_NFT)];
    t.equal(nft.report.chain, `inet filter/input to ${SERVER}, inet filter/output from ${SERVER}`);
    const d = diff(listOfNode(ipt.node, 'iptables'), listOfNode(nft.node, 'nft'));
    t.ok(d.equivalent, 'an empty diff');
  },
);

t.test('firewall explain --host: INPUT for a packet to the host, OUTPUT from it, refused otherwise', async (t) => {
  const dir = await scratch(t);
  const rules = path.join(dir, 'server.v4');
  await writeFile(rules, HOST_DUMP);
  const explain = (packet: string) => cli(['firewall', 'explain', rules, packet, '--host', SERVER], { workspace: dir });
  const to = await explain(`src=10.0.2.1 dst=${SERVER} proto=tcp dport=22`);
  t.equal(to.code, 0, to.stderr);
  t.match(JSON.parse(to.stdout), { verdict: 'DENY', decidedBy: { kind: 'policy', chain: 'filter/INPUT' } });
  const from = await explain(`src=${SERVER} dst=10.0.2.1 proto=tcp dport=22`);
  t.match(JSON.parse(from.stdout), { verdict: 'DENY', decidedBy: { chain: 'filter/OUTPUT', line: 9 } });
  const neither = await explain(`src=10.0.3.1 dst=10.0.2.1 proto=tcp dport=22`);
  t.equal(neither.code, 2);
  t.match(neither.stderr, /^nfv: packet: neither to nor from the host 10\.0\.9\.1 \(--host\)/);
});

t.test('over HTTP: import with host and store, deploy with ?host= writes INPUT and OUTPUT', async (t) => {
  const ws = await workspace(t);
  const body = { format: 'iptables', text: HOST_DUMP, file: 'server.v4', node: FW, host: SERVER, store: true };
  const stored = await call(ws, 'POST', '/fwd/import', body);
  if (!stored.ok) return t.fail(stored.error);
  const id = (content(stored) as { id: number }).id;
  for (const segment of ['getIptables', 'getNftables']) {
    const o = await call(ws, 'GET', `/fwd/deploy/${segment}/${id}?host=${SERVER}`);
    if (!o.ok) return t.fail(o.error);
    const text = String(content(o));
    t.match(
      text,
      segment === 'getIptables'
        ? /\n-A INPUT -s 10\.0\.1\.0\/24 -d 10\.0\.9\.1\/32 -p tcp --dport 22 -j ACCEPT\n/
        : /\n\t\tip saddr 10\.0\.1\.0\/24 ip daddr 10\.0\.9\.1 tcp dport 22 accept\n/,
      segment,
    );
  }
  const bad = await call(ws, 'GET', `/fwd/deploy/getOpenVswitch/${id}?host=${SERVER}`);
  t.notOk(bad.ok);
  if (!bad.ok) t.match(bad.error, /^host: only iptables and nftables/);
});
