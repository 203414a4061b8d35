/**
 * A real router read with its routing table (issue 47, item 5): the Shorewall router of the Iptables_Semantics
 * corpus (test/fixtures/iptables/real/sqrl-shorewall-2015-aug.rules, BSD-2, NOTICE.md there), whose FORWARD rules
 * dispatch on `-i`/`-o`, with `--routes` from the same corpus's interface assignment. Without routes 24 of its 46
 * reached lines are approximated; with them one (`-i lua`, an interface with no address). Checked by an interpreter
 * of this test's own: it walks raw PREROUTING and filter FORWARD with their user chains for the first packet of a
 * connection, each interface the one its own longest-prefix reading of the routes file gives (a packet comes in by
 * the interface its source is routed out of). nfv's must reading decides every sample packet as it does, and the
 * may reading too wherever nfv does not mark the answer as resting on the approximated line.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { ok, workspace } from './call.js';
import { allowsCheck, allowsOf, Budget } from '../../src/deploy/analysis/index.js';
import { importRules, importedList, routeMap } from '../../src/deploy/import/index.js';
import { ruleBox } from '../../src/model/space.js';
import { ROOT } from '../helpers.js';

const DIR = path.join(ROOT, 'test/fixtures/iptables/real');

const num = (a: string) => a.split('.').reduce((v, o) => v * 256 + Number(o), 0);
function prefix(cidr: string): [number, number] {
  const [a, p] = cidr.split('/');
  const size = 2 ** (32 - Number(p ?? 32));
  const lo = num(a!) - (num(a!) % size);
  return [lo, lo + size - 1];
}

interface Packet {
  src: string;
  dst: string;
  proto: string;
  sport: number;
  dport: number;
  iif: string;
  oif: string;
}

/** The interface a route sends an address out of, longest prefix first; '' for none (unreachable). */
function router(routes: string) {
  const table = routes
    .trim()
    .split('\n')
    .map((l) => {
      const w = l.trim().split(/\s+/);
      const unreachable = w[0] === 'unreachable';
      const dest = unreachable ? w[1]! : w[0]!;
      const [lo, hi] = dest === 'default' ? [0, 2 ** 32 - 1] : prefix(dest);
      return { lo, hi, dev: unreachable ? '' : w[w.indexOf('dev') + 1]! };
    })
    .sort((a, b) => a.hi - a.lo - (b.hi - b.lo));
  return (addr: string) => table.find((r) => num(addr) >= r.lo && num(addr) <= r.hi)?.dev ?? '';
}

type Chains = Map<string, string[][]>;

/** The `-A` lines of each `table/chain`, as words. */
function chainsOf(text: string): Chains {
  const chains: Chains = new Map();
  let table = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('*')) table = line.slice(1).trim();
    if (!line.startsWith('-A ')) continue;
    const w = line.trim().split(/\s+/);
    const key = `${table}/${w[1]}`;
    chains.set(key, [...(chains.get(key) ?? []), w.slice(2)]);
  }
  return chains;
}

function inCidr(cidr: string, addr: string) {
  const [lo, hi] = prefix(cidr);
  return num(addr) >= lo && num(addr) <= hi;
}
function inPorts(spec: string, port: number) {
  const [lo, hi] = spec.split(':');
  return port >= Number(lo) && port <= Number(hi ?? lo);
}

/** Whether a rule's conditions hold for the first packet of a connection; undefined for one it cannot say. */
function holds(w: string[], p: Packet): boolean | undefined {
  let negate = false;
  for (let k = 0; k < w.length; k++) {
    const opt = w[k]!;
    if (opt === '!') {
      negate = true;
      continue;
    }
    const v = w[k + 1]!;
    let hit: boolean | undefined;
    if (opt === '-s') hit = inCidr(v, p.src);
    else if (opt === '-d') hit = inCidr(v, p.dst);
    else if (opt === '-i') hit = p.iif === v;
    else if (opt === '-o') hit = p.oif === v;
    else if (opt === '-p') hit = p.proto === v;
    else if (opt === '--dport') hit = inPorts(v, p.dport);
    else if (opt === '--sport') hit = inPorts(v, p.sport);
    else if (opt === '--state' || opt === '--ctstate') hit = v.split(',').includes('NEW');
    else if (opt === '-j' || opt === '-m' || opt === '--comment' || opt === '--reject-with') {
      k++;
      continue;
    } else if (opt === '--checksum-fill') continue;
    else return undefined;
    if (hit === negate) return false;
    negate = false;
    k++;
  }
  return true;
}

/** The verdict of one chain: 'accept', 'drop', or undefined when the packet falls off (or returns). */
function walk(chains: Chains, table: string, chain: string, p: Packet): 'accept' | 'drop' | undefined {
  for (const w of chains.get(`${table}/${chain}`) ?? []) {
    const match = holds(w, p);
    if (match === undefined) throw new Error(`the interpreter cannot read: ${w.join(' ')}`);
    if (!match) continue;
    const target = w[w.indexOf('-j') + 1];
    if (target === 'ACCEPT') return 'accept';
    if (target === 'DROP' || target === 'REJECT') return 'drop';
    if (target === 'RETURN') return undefined;
    if (target === 'LOG' || target === 'CHECKSUM') continue;
    const called = walk(chains, table, target!, p);
    if (called) return called;
  }
  return undefined;
}

/** Raw PREROUTING, then filter FORWARD (policy DROP). */
function kernelVerdict(chains: Chains, p: Packet): boolean {
  if (walk(chains, 'raw', 'PREROUTING', p) === 'drop') return false;
  return walk(chains, 'filter', 'FORWARD', p) === 'accept';
}

t.test('a real router read with --routes: exact where its routes say, checked packet by packet', async (t) => {
  const rules = await readFile(path.join(DIR, 'sqrl-shorewall-2015-aug.rules'), 'utf8');
  const routes = await readFile(path.join(DIR, 'sqrl-shorewall-2015-aug.routes'), 'utf8');
  const ws = await workspace(t);
  const name = 'sqrl-shorewall-2015-aug.rules';

  const without = await ok(
    t,
    ws,
    'POST',
    '/fwd/import',
    { text: rules, file: name, format: 'iptables', node: 'fw' },
    200,
  );
  const withRoutes = await ok(
    t,
    ws,
    'POST',
    '/fwd/import',
    { text: rules, file: name, format: 'iptables', node: 'fw', routes },
    200,
  );
  t.equal(without.report.counts.approximated, 24, 'without routes: 24 lines approximated');
  t.equal(withRoutes.report.counts.refused, 0, 'none refused');
  const approximated = (withRoutes.report.lines as { where: string; class: string; reason?: string }[]).filter(
    (l) => l.class === 'approximated',
  );
  t.same(
    approximated.map((l) => l.where),
    [`${name}:115`],
    'with routes: only -i lua, an interface with no address',
  );
  t.match(approximated[0]!.reason, /-i lua: interface not mapped/);

  const chains = chainsOf(rules);
  const route = router(routes);
  const addresses = [
    '10.13.42.137',
    '10.13.42.130',
    '10.13.42.150',
    '10.13.42.170',
    '10.13.44.9',
    '10.13.42.180',
    '10.13.37.5',
    '10.13.43.3',
    '10.13.43.20',
    '8.8.8.8',
    '131.159.207.206',
    '141.76.2.4',
  ];
  const services: [string, number][] = [
    ['tcp', 53],
    ['udp', 53],
    ['tcp', 80],
    ['udp', 1194],
    ['tcp', 443],
  ];
  // Packet by packet in process (one import, the lists the operations analyse), the query box as `allows` makes it.
  const imported = importRules('iptables', rules, name, { chain: 'FORWARD', iface: routeMap(routes, 'routes') });
  const [may, must] = [importedList(imported, 'may'), importedList(imported, 'must')];
  let firm = 0;
  let marked = 0;
  for (const src of addresses)
    for (const dst of addresses) {
      if (src === dst) continue;
      for (const [proto, dport] of services) {
        const p: Packet = { src, dst, proto, sport: 40000, dport, iif: route(src), oif: route(dst) };
        const want = kernelVerdict(chains, p);
        const box = ruleBox({
          source: src,
          destination: dst,
          protocol: proto.toUpperCase(),
          srcPort: '40000',
          dstPort: String(dport),
        });
        const said = `${src} -> ${dst} ${proto} ${dport}: ${want ? 'ALLOW' : 'DENY'}`;
        t.equal(allowsOf(must, box).classes.length > 0, want, `must: ${said}`);
        const classes = allowsOf(may, box, new Budget(), false, allowsCheck(may, must, new Budget())).classes;
        if (classes.some((c) => c.approximated)) marked++;
        else {
          firm++;
          t.equal(classes.length > 0, want, `may, unmarked: ${said}`);
        }
      }
    }
  t.ok(firm > 300 && marked > 0, `${firm} firm answers, ${marked} marked as resting on -i lua`);
});
