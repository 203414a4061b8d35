/**
 * `nfv emulate` in real namespaces (src/deploy/emulate): a network whose verdicts are worked out here by hand; an
 * engine answer on a redundant network, where the kernel must agree with every claim; the same answer broken on
 * purpose (a rule removed, a default flipped), where the requirements that break must be exactly those the
 * independent evaluator (test/engine/evaluator.ts, which shares no code with emulate or the engine) says break, and
 * each must name the firewall; nodes named by patterns; refusals (a name that is not an address, a missing tool) in
 * one line with exit 2; the CLI's JSON, XML and exit codes;
 * unprivileged runs; and nothing left behind after SIGKILL at several moments. Networks of at most 23 nodes.
 */
import { spawnSync } from 'node:child_process';
import { chmod, mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { generateFabric } from '../../../src/bench/fabric.js';
import {
  blameRequests,
  emulate,
  planEmulation,
  readVerdicts,
  runPlan,
  type EmulationReport,
} from '../../../src/deploy/emulate/index.js';
import { simulate } from '../../../src/engine/simulate.js';
import { decodeDocument } from '../../../src/model/codec.js';
import { NfvError } from '../../../src/model/errors.js';
import { NfvType } from '../../../src/model/resources.js';
import type { NFV, Node } from '../../../src/model/types.js';
import { nfvInProcess } from '../../cli/in-process.js';
import { ROOT, SHARED, alive, scratch, spawnNfv, until } from '../../helpers.js';
import { violations } from '../../engine/evaluator.js';
import { packetsWhy } from '../nft-harness.js';

const skip = packetsWhy || false;

/** A client with two ways to a server: through a firewall allowing TCP 443 only, or one allowing all but 10.0.0.3. */
const handMade = (claims: boolean[]): NFV => ({
  graphs: {
    graph: [
      {
        id: 0,
        node: [
          { name: '10.0.0.1', functionalType: 'WEBCLIENT', neighbour: [{ name: '10.0.1.1' }] },
          {
            name: '10.0.1.1',
            functionalType: 'FORWARDER',
            neighbour: [{ name: '10.0.0.1' }, { name: '10.0.1.2' }, { name: '10.0.1.3' }],
          },
          {
            name: '10.0.1.2',
            functionalType: 'FIREWALL',
            neighbour: [{ name: '10.0.1.1' }, { name: '10.0.1.4' }],
            configuration: {
              name: 'fw',
              firewall: {
                defaultAction: 'DENY',
                elements: [
                  { action: 'ALLOW', source: '10.0.0.1', destination: '10.0.0.2', protocol: 'TCP', dstPort: '443' },
                ],
              },
            },
          },
          {
            name: '10.0.1.3',
            functionalType: 'FIREWALL',
            neighbour: [{ name: '10.0.1.1' }, { name: '10.0.1.4' }],
            configuration: {
              name: 'fw2',
              firewall: {
                defaultAction: 'ALLOW',
                elements: [{ action: 'DENY', source: '10.0.0.3', destination: '10.0.0.2' }],
              },
            },
          },
          {
            name: '10.0.1.4',
            functionalType: 'FORWARDER',
            neighbour: [{ name: '10.0.1.2' }, { name: '10.0.1.3' }, { name: '10.0.0.2' }, { name: '10.0.0.3' }],
          },
          { name: '10.0.0.2', functionalType: 'WEBSERVER', neighbour: [{ name: '10.0.1.4' }] },
          { name: '10.0.0.3', functionalType: 'WEBCLIENT', neighbour: [{ name: '10.0.1.4' }] },
        ],
      },
    ],
  },
  propertyDefinition: {
    property: [
      { graph: 0, name: 'REACHABILITY_PROPERTY', src: '10.0.0.1', dst: '10.0.0.2', lv4Proto: 'TCP', dstPort: '443' },
      { graph: 0, name: 'ISOLATION_PROPERTY', src: '10.0.0.1', dst: '10.0.0.2', lv4Proto: 'UDP' },
      { graph: 0, name: 'ISOLATION_PROPERTY', src: '10.0.0.3', dst: '10.0.0.2' },
      { graph: 0, name: 'ISOLATION_PROPERTY', src: '10.0.0.1', dst: '10.0.0.2', lv4Proto: 'TCP', dstPort: '22' },
    ].map((p, k) => ({ ...p, isSat: claims[k] })) as NFV['propertyDefinition']['property'],
  },
});

const brief = (r: EmulationReport) => r.requirements.map((q) => [q.index, q.kernel, q.claim, q.agree, q.path, q.rule]);

t.test('a network worked out by hand: the kernel verdicts, paths and deciding rules', { skip }, async (t) => {
  const nfv = handMade([true, true, true, true]);
  t.equal(JSON.stringify(planEmulation(nfv)), JSON.stringify(planEmulation(nfv)), 'the same plan, byte for byte');
  const r = await emulate(nfv);
  const [viaFw, viaFw2] = [
    '10.0.0.1 > 10.0.1.1 > 10.0.1.2 > 10.0.1.4 > 10.0.0.2',
    '10.0.0.1 > 10.0.1.1 > 10.0.1.3 > 10.0.1.4 > 10.0.0.2',
  ];
  t.same(brief(r), [
    // TCP 443 passes fw (its one rule) on the default route, the first of the two shortest paths.
    [0, 'holds', 'holds', true, viaFw, '10.0.1.2 #2 ip saddr 10.0.0.1 ip daddr 10.0.0.2 tcp dport 443 accept'],
    // UDP is dropped by fw, but fw2 lets all of 10.0.0.1's traffic through on the other path.
    [1, 'fails', 'holds', false, viaFw2, '10.0.1.3 policy accept'],
    // 10.0.0.3 reaches the server through the last forwarder alone: no firewall on its path.
    [2, 'fails', 'holds', false, '10.0.0.3 > 10.0.1.4 > 10.0.0.2', 'no firewall on the path'],
    // TCP 22 is dropped by fw's default, and passes fw2.
    [3, 'fails', 'holds', false, viaFw2, '10.0.1.3 policy accept'],
  ]);
  t.equal(r.agree, false);
  t.equal(r.requirements[0]!.paths, 2, 'both simple paths probed');
  t.ok(
    r.notCovered.some((n) => /sampled/.test(n)),
    'the report says what it does not cover',
  );

  // With fw2 dropping 10.0.0.1 too, the UDP isolation holds, decided by fw's default on the default route.
  const closed = handMade([true, true, false, true]);
  closed.graphs.graph![0]!.node[3]!.configuration!.firewall!.elements!.unshift({
    action: 'DENY',
    source: '10.0.0.1',
    destination: '10.0.0.2',
  });
  const c = await emulate(closed);
  t.same(brief(c)[1], [1, 'holds', 'holds', true, viaFw, '10.0.1.2 policy drop']);
  t.same(brief(c)[3], [3, 'holds', 'holds', true, viaFw, '10.0.1.2 policy drop']);
  t.same(brief(c)[2]!.slice(1, 4), ['fails', 'fails', true], 'a claim that fails, and the kernel agrees');
});

t.test('an answer later than the wait is waited for, never read as a drop', { skip }, async (t) => {
  // Each listener's queue one connection long (somaxconn 0, no SYN cookies): the SYNs that find it full are dropped
  // by the listener, not by a firewall, and sent again a second later, long after the wait for answers (0.3 s), as
  // on a machine too busy to answer in time. Read from the clock, they were drops: "no route" where TCP 443 holds.
  const nfv = handMade([true, false, false, false]);
  const plan = planEmulation(nfv);
  plan.sysctl.push(['net/core/somaxconn', '0'], ['net/ipv4/tcp_syncookies', '0']);
  const late = await runPlan(plan, (arrived) => blameRequests(plan, arrived));
  const r = readVerdicts(plan, late.arrived, late.blamed);
  t.same(brief(r), brief(await emulate(nfv)), 'the verdicts, paths and deciding rules of a queue as it is');
  t.equal(r.agree, true);

  // Packets lost where no firewall counts them (a forwarder's own table drops all): no verdict, an error.
  const lost = planEmulation(nfv);
  lost.nft.n1 = 'table ip lost {\n\tchain forward {\n\t\ttype filter hook forward priority 0; policy drop;\n\t}\n}\n';
  lost.undecidedSeconds = 1;
  await t.rejects(
    runPlan(lost, (arrived) => blameRequests(lost, arrived)),
    {
      status: 422,
      message: /^emulate: 16 probes neither answered nor dropped by a firewall in 1 s$/,
    },
  );
});

/** A redundant network (leaf-spine, 23 nodes) and the engine's answer for it. */
async function answer(): Promise<NFV> {
  const nfv = generateFabric({
    shape: { kind: 'leaf-spine', spines: 2, leaves: 3, hostsPerLeaf: 2 },
    nat: false,
    seed: 7,
    requirementsPerHost: 2,
  });
  const r = await simulate(nfv, { algorithm: 'AP', timeoutSeconds: 600 });
  return r.nfv;
}

const firewallsOf = (nfv: NFV): Node[] =>
  (nfv.graphs.graph ?? []).flatMap((g) => g.node.filter((n) => n.functionalType === 'FIREWALL'));

t.test(
  'an engine answer: the kernel agrees with every claim; broken on purpose, it names each break',
  { skip },
  async (t) => {
    const nfv = await answer();
    t.ok(nfv.graphs.graph![0]!.node.length <= 30);
    t.same(violations(nfv), [], 'the independent evaluator finds the answer right');
    const r = await emulate(nfv);
    t.same(
      r.requirements.filter((q) => !q.agree),
      [],
      'the kernel agrees with every claim',
    );
    t.ok(
      r.requirements.some((q) => q.paths > 1),
      'requirements probed on several paths',
    );
    t.ok(r.requirements.every((q) => q.claim === 'holds'));

    /** Emulates a broken copy: the requirements that disagree must be those the evaluator says break. */
    const broken = async (what: string, change: (fw: Node) => boolean) => {
      const copy = structuredClone(nfv);
      const fw = firewallsOf(copy).find(change);
      if (!fw) return t.fail(`${what}: no firewall to break`);
      const expected = violations(copy).map((v) => v.index);
      t.ok(expected.length > 0, `${what}: the evaluator says something breaks`);
      const e = await emulate(copy);
      const wrong = e.requirements.filter((q) => !q.agree);
      t.same(
        wrong.map((q) => q.index),
        expected,
        `${what}: the kernel disagrees exactly where the evaluator says it breaks`,
      );
      for (const q of wrong) {
        t.equal(q.kernel, 'fails', `${what}: #${q.index} fails in the kernel`);
        t.match(q.rule, fw.name, `${what}: #${q.index} names firewall ${fw.name}: ${q.rule}`);
      }
      t.equal(e.agree, false);
    };
    // An isolation's DENY rule removed (every firewall of this answer allows by default and denies by rule).
    await broken('a rule removed', (fw) => {
      const rules = fw.configuration!.firewall!.elements ?? [];
      const k = rules.findIndex((e) => e.action === 'DENY');
      if (k < 0) return false;
      rules.splice(k, 1);
      return true;
    });
    // A default flipped: the reachability through it is dropped.
    await broken('a default flipped', (fw) => {
      const f = fw.configuration!.firewall!;
      if (f.defaultAction !== 'ALLOW') return false;
      f.defaultAction = 'DENY';
      return true;
    });
  },
);

t.test('links listed by one end only carry packets one way, as in the engine (VEREFOO 7FW4P)', { skip }, async (t) => {
  // 30.0.5.2 lists 20.0.0.6 but 20.0.0.6 does not list it: the way in is through 20.0.0.7 and its DENY rule only.
  const input = await readFile(path.join(SHARED, 'verefoo-testfile', 'FWAutoconfiguration', '7FW4P.xml'), 'utf8');
  const result = await simulate(decodeDocument(NfvType, input, 'xml'), { algorithm: 'AP', timeoutSeconds: 600 });
  t.same(violations(result.nfv), [], 'the independent evaluator finds the answer right');
  const r = await emulate(result.nfv);
  t.same(
    r.requirements.filter((q) => !q.agree),
    [],
    'the kernel agrees with every claim',
  );
  t.ok(
    r.requirements.every((q) => q.kernel !== 'holds' || q.path.endsWith('20.0.0.7 > 30.0.5.2')),
    'every isolation holds at 20.0.0.7, the one way in',
  );
});

t.test('refusals: several graphs, names that are not addresses; exit 2 in one line', async (t) => {
  const ws = await scratch(t);
  const office = await readFile(path.join(ROOT, 'samples', 'office-nat.xml'), 'utf8');
  const r = await nfvInProcess(['emulate', '-'], { workspace: ws, input: office.replaceAll('"203.0.113.1"', '"nat"') });
  t.equal(r.code, 2);
  t.equal(r.stdout, '');
  t.equal(r.stderr, 'nfv: emulate: node "nat": its name is not one IPv4 address\n');
  const named = handMade([true, true, true, true]);
  named.graphs.graph![0]!.node[0]!.name = 'laptop';
  t.throws(
    () => planEmulation(named),
    new NfvError(422, 'emulate: node "laptop": its name is not one IPv4 address or pattern'),
  );
  const two = handMade([]);
  two.graphs.graph!.push({ ...two.graphs.graph![0]!, id: 1 });
  t.throws(() => planEmulation(two), /2 graphs; one graph is emulated at a time/);
});

t.test(
  "links without ARP, one MAC per pair; at most a rule per path slot, and a pair's rule has its route",
  async (t) => {
    const plan = planEmulation(await answer());
    const links = plan.create.split('\n').filter((l) => l.startsWith('link add'));
    const macs = links.map((l) => [...l.matchAll(/ address (\S+)/g)].map((m) => m[1]));
    t.ok(
      macs.every((m) => m.length === 2 && m[0] === m[1]),
      'both ends of each veth pair have one MAC address',
    );
    t.equal(new Set(macs.map((m) => m[0])).size, links.length, 'each pair its own');
    const config = Object.values(plan.config).join('');
    t.equal(config.match(/^link set l\d+ up arp off$/gm)?.length, 2 * links.length, 'ARP off on every veth end');
    for (const [ns, text] of Object.entries(plan.config)) {
      const rules = text.split('\n').filter((l) => l.startsWith('rule add'));
      const slots = rules.filter((l) => !l.includes(' from '));
      // A slot rule per TOS value at most; the others name a pair, and only where two paths of a slot collide.
      t.ok(slots.length <= 8, `${ns}: ${slots.length} slot rules`);
      for (const rule of rules.filter((l) => l.includes(' from '))) {
        const [, , to, table] = /from (\S+)\/32 to (\S+)\/32.* table (\d+)/.exec(rule) ?? [];
        t.match(text, new RegExp(`^route add ${to}/32 via \\S+ dev \\S+ table ${table}$`, 'm'), `${ns}: ${rule}`);
      }
    }
  },
);

t.test('a node named by a pattern (a whole network) is built and probed at one address of it', async (t) => {
  const plain = planEmulation(handMade([true, true, true, true]));
  /** handMade with 10.0.0.1 named 10.0.0.-1 wherever a node, a requirement or (with `rules`) a rule names it. */
  const renamed = (rules: boolean) => {
    const network = handMade([true, true, true, true]);
    const rename = (x: string) => (x === '10.0.0.1' ? '10.0.0.-1' : x);
    for (const n of network.graphs.graph![0]!.node) {
      n.name = rename(n.name);
      for (const nb of n.neighbour ?? []) nb.name = rename(nb.name);
      for (const e of rules ? (n.configuration?.firewall?.elements ?? []) : []) e.source = rename(e.source);
    }
    for (const p of network.propertyDefinition!.property) p.src = rename(p.src);
    return network;
  };
  const plan = planEmulation(renamed(true));
  t.same(plan.probes, plain.probes, 'probed from 10.0.0.1: the first address of the pattern no node or rule names');
  t.equal(plan.config.n0, plain.config.n0, 'the same address on its link');
  t.equal(plan.requirements[0]!.src, '10.0.0.-1', 'the report names the node as the answer does');
  // A rule naming 10.0.0.1 alone: the pattern's address is the next free one (.2 and .3 are nodes).
  t.equal(planEmulation(renamed(false)).probes[0]!.src, '10.0.0.4');
});

t.test('a missing tool: one line naming it, exit 2', { skip }, async (t) => {
  const dir = await scratch(t);
  const bin = path.join(dir, 'bin');
  await mkdir(bin);
  // Everything the sandbox needs but ip.
  for (const tool of ['unshare', 'mount', 'env', 'setpriv'])
    for (const at of ['/usr/bin', '/bin', '/usr/sbin', '/sbin'])
      if (spawnSync('test', ['-x', `${at}/${tool}`]).status === 0) {
        await symlink(`${at}/${tool}`, path.join(bin, tool)).catch(() => undefined);
        break;
      }
  await symlink(process.execPath, path.join(bin, 'node'));
  const file = path.join(dir, 'answer.json');
  await writeFile(file, JSON.stringify(handMade([true, true, true, true])));
  const r = await nfvInProcess(['--format', 'json', 'emulate', file], { workspace: dir, env: { PATH: bin } });
  t.equal(r.code, 2, r.stderr);
  t.match(r.stderr, /^nfv: emulate: the kernel or system lacks what it needs: [^\n]*ip is not installed\n$/);
  const nodeOnly = path.join(dir, 'node-only');
  await mkdir(nodeOnly);
  await symlink(process.execPath, path.join(nodeOnly, 'node'));
  const none = await nfvInProcess(['emulate', file], { workspace: dir, env: { PATH: nodeOnly } });
  t.equal(none.code, 2);
  t.match(none.stderr, /^nfv: emulate: [^\n]*unshare[^\n]*\n$/);
});

t.test('the CLI: a stored simulation and a file, JSON piped, exit 1 on a disagreement', { skip }, async (t) => {
  const ws = await scratch(t);
  const file = path.join(ws, 'fixture.xml');
  await writeFile(file, await readFile(path.join(ROOT, 'test', 'fixtures', 'nfv.xml'), 'utf8'));
  const stored = await nfvInProcess(['simulate', '--store', file, '--format', 'json'], { workspace: ws });
  t.equal(stored.code, 1, 'the fixture has no placement for its substrate, so simulate exits 1');
  const byId = await nfvInProcess(['emulate', '1'], { workspace: ws });
  t.equal(byId.code, 0, byId.stderr);
  const report = JSON.parse(byId.stdout) as EmulationReport;
  t.equal(report.agree, true);
  t.same(
    report.requirements.map((q) => [q.requirement, q.kernel, q.claim]),
    [
      ['ISOLATION_PROPERTY 10.0.0.1 -> 20.0.0.1', 'holds', 'holds'],
      ['REACHABILITY_PROPERTY 10.0.0.1 -> 20.0.0.1', 'holds', 'holds'],
    ],
  );
  const viaRequest = await nfvInProcess(['request', 'POST', '/adp/simulations/1/emulation'], { workspace: ws });
  t.equal(viaRequest.code, 0, viaRequest.stderr);
  t.same((JSON.parse(viaRequest.stdout) as EmulationReport).requirements, report.requirements, 'HTTP: the same');
  const byGraph = await nfvInProcess(['emulate', '--gid', '1', '--rid', '1'], { workspace: ws });
  t.equal(byGraph.code, 0, byGraph.stderr);
  t.match(byGraph.stderr, /simulated as simulation 2/);
  t.equal((JSON.parse(byGraph.stdout) as EmulationReport).agree, true, '--gid: simulated, stored, emulated');
  const missing = await nfvInProcess(['emulate', '9'], { workspace: ws });
  t.equal(missing.code, 3);
  t.match(missing.stderr, /^nfv: simulation 9 does not exist\n$/);

  const wrong = path.join(ws, 'wrong.json');
  await writeFile(wrong, JSON.stringify(handMade([true, false, true, true])));
  const r = await nfvInProcess(['emulate', wrong], { workspace: ws });
  t.equal(r.code, 1, 'the kernel disagrees with claims 2 and 3');
  t.same(
    (JSON.parse(r.stdout) as EmulationReport).requirements.map((q) => q.agree),
    [true, true, false, false],
  );
  t.match(r.stderr, /the kernel disagrees with 2 claims/);
  // XML: the same verdicts, one element per requirement, read here with a pattern of its own.
  const xml = await nfvInProcess(['--format', 'xml', 'emulate', wrong], { workspace: ws });
  t.equal(xml.code, 1, xml.stderr);
  t.match(xml.stdout, /^<\?xml [^\n]*\n<emulation agree="false" namespaces="7" links="7" firewalls="2" probes="\d+">/);
  t.same(
    [...xml.stdout.matchAll(/<requirement index="(\d)" kernel="(\w+)" claim="(\w+)" agree="(\w+)"/g)].map((m) =>
      m.slice(1),
    ),
    [
      ['0', 'holds', 'holds', 'true'],
      ['1', 'fails', 'fails', 'true'],
      ['2', 'fails', 'holds', 'false'],
      ['3', 'fails', 'holds', 'false'],
    ],
  );
  t.match(xml.stdout, /<notCovered>ICMP echo stands for every protocol other than TCP and UDP<\/notCovered>/);
});

t.test(
  'unprivileged: as nobody, in a user namespace of its own',
  { skip: skip || process.getuid?.() !== 0 },
  async (t) => {
    const dir = await scratch(t);
    await chmod(dir, 0o777);
    const file = path.join(dir, 'answer.json');
    await writeFile(file, JSON.stringify(handMade([true, false, false, false])));
    await chmod(file, 0o644);
    const run = spawnSync(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        'env',
        '-u',
        'NODE_OPTIONS',
        `NFV_WORKSPACE=${dir}`,
        path.join(ROOT, 'bin', 'nfv'),
        'emulate',
        file,
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    t.equal(run.status, 0, run.stderr);
    t.equal((JSON.parse(run.stdout) as EmulationReport).agree, true);
  },
);

/** Every process's parent, from /proc. */
async function parents(): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const pid of (await readdir('/proc')).filter((p) => /^\d+$/.test(p))) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid) out.set(Number(pid), ppid);
  }
  return out;
}
async function descendants(root: number): Promise<number[]> {
  const tree = await parents();
  const found = [root];
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, ppid] of tree)
      if (found.includes(ppid) && !found.includes(pid)) {
        found.push(pid);
        grew = true;
      }
  }
  return found.slice(1);
}
/** The host's namespaces and links, in one sh (a sh per command was two processes more per look). */
const hostState = () =>
  spawnSync('sh', ['-c', 'ip netns list; echo ---; ip -o link show; echo ---; ls -A /run/netns 2>/dev/null; true'], {
    encoding: 'utf8',
  }).stdout;

t.test('SIGKILL at several moments leaves no process, namespace or link behind', { skip }, async (t) => {
  const dir = await scratch(t);
  const file = path.join(dir, 'answer.json');
  const nfv = await answer();
  // Each requirement ten times: the copies' probes have the same ports, so each copy waits for a round of its own,
  // and the emulation lasts seconds, not the few hundred milliseconds the answer alone now takes.
  const property = nfv.propertyDefinition.property;
  nfv.propertyDefinition.property = Array.from({ length: 10 }, () => property).flat();
  await writeFile(file, JSON.stringify(nfv));
  const before = hostState();
  // Moments: before the sandbox starts; as soon as it has; once its namespaces exist (building or probing: the
  // sandbox's own /run/netns, seen through /proc/PID/root; a time after the start was a guess that a faster
  // emulation outran).
  const namespacesMade = async (pids: number[]) => {
    for (const pid of pids) {
      const names = await readdir(`/proc/${pid}/root/run/netns`).catch(() => []);
      if (names.length > 0) return true;
    }
    return false;
  };
  for (const moment of ['150 ms', 'sandbox', 'namespaces made', 'namespaces made + 400 ms']) {
    const child = spawnNfv(['emulate', file], { NFV_WORKSPACE: dir });
    t.teardown(() => void child.kill('SIGKILL'));
    const started = performance.now();
    let seen: number[] = [];
    const due = async () => {
      seen = [...new Set([...seen, ...(await descendants(child.pid!))])];
      if (moment === '150 ms') return performance.now() - started >= 150;
      return seen.length >= 2;
    };
    t.ok(await until(due, 20), `${moment}: the moment came`);
    if (moment.startsWith('namespaces made'))
      t.ok(await until(async () => (await due()) && (await namespacesMade(seen)), 20), `${moment}: they exist`);
    if (moment === 'namespaces made + 400 ms') {
      const at = performance.now();
      await until(async () => (await due()) && performance.now() - at >= 400, 5);
    }
    t.equal(child.exitCode, null, `${moment}: nfv still running`);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('close', r));
    t.ok(
      await until(() => seen.every((pid) => !alive(pid)), 10),
      `killed at ${moment}: its ${seen.length} processes are gone`,
    );
    t.equal(hostState(), before, `killed at ${moment}: namespaces and links as before`);
  }
  // Ctrl-C while it probes: exit 130, and the same.
  const child = spawnNfv(['emulate', file], { NFV_WORKSPACE: dir });
  t.teardown(() => void child.kill('SIGKILL'));
  let seen: number[] = [];
  t.ok(await until(async () => (seen = await descendants(child.pid!)).length >= 2, 20), 'Ctrl-C: the sandbox runs');
  const closed = new Promise<number | null>((r) => child.once('close', r));
  child.kill('SIGINT');
  t.equal(await closed, 130, 'Ctrl-C: exit 130');
  t.ok(await until(() => seen.every((pid) => !alive(pid)), 10), 'Ctrl-C: its processes are gone');
  t.equal(hostState(), before, 'Ctrl-C: namespaces and links as before');
  // After a whole run too.
  const done = await nfvInProcess(['emulate', file], { workspace: dir });
  t.equal(done.code, 0, done.stderr);
  t.equal(hostState(), before, 'after success: as before');
});
