/**
 * "Proven minimal" against every rule list (issue 26, item 7): on small generated networks, every host behind one
 * allocation place, the engine's answer is re-checked by the independent evaluator, and a brute force over every
 * rule list of up to 3 rules at that place (ordered, either action, either default), built from the network's
 * addresses and their generalisations (octet patterns with any octets -1, CIDR prefixes), its ports and their
 * ranges, and each protocol or ANY, looks for a shorter valid list: there is none where the answer is called
 * minimal, and none of whole-class rules anywhere. It shares no code with src/engine: it decides
 * the requirements on its own packet atoms (host pair, protocol, port cells). Also: a candidate formula past its
 * bound (rule-model.ts, `CandidateBound`) is given up whole, and a search for candidates with an aim (the classes a
 * default may need, those it must not cover) finds what the whole search finds and the aim allows; a fast answer's
 * fewest rules take a class left free where that saves a rule, never a bound one; and the candidates `offered` keeps
 * cost no more at their cheapest than all of them, on random covers, by brute force.
 */
import t from 'tap';
import { WorkPool, unbounded } from '../../../src/engine/solving/work.js';
import { random } from '../../../src/bench/topology.js';
import type { Property } from '../../../src/model/types.js';
import { DPORT, PROTO, Partition, SRC, UNIVERSE, rewrite } from '../../../src/model/space.js';
import type { NetNode } from '../../../src/engine/flows/network.js';
import {
  RuleModel,
  candidateRules,
  fewestRules,
  offered,
  type Aim,
  type Candidate,
  type CandidateBound,
  type Term,
} from '../../../src/engine/rules/rule-model.js';
import { checkedSimulate } from '../evaluator.js';
import { isolation, network, place, reachability, webclient, webserver } from '../build.js';

const PLACE = '1.0.0.1';
const CLIENTS = ['40.40.1.1', '40.40.2.1', '40.40.3.1', '40.41.1.1', '50.1.1.1', '50.1.2.1', '10.0.0.1', '10.0.0.2'];
const SERVERS = ['130.10.0.1', '130.10.0.2', '130.11.0.1', '20.0.0.1'];
const PORTS = ['80', '443', '22', '80-443'];
const NETWORKS = 220;
/** Bit sets of atoms are JS numbers: inputs with more atoms are generated again. */
const MAX_ATOMS = 30;
const MAX_RULES = 3;

interface Case {
  hosts: string[];
  clients: string[];
  servers: string[];
  properties: Property[];
}

function generate(seed: number): Case {
  const next = random(seed);
  const pick = <T>(xs: T[], n: number) => {
    const pool = [...xs];
    const out: T[] = [];
    while (out.length < n && pool.length) out.push(pool.splice(Math.floor(next() * pool.length), 1)[0]!);
    return out;
  };
  const clients = pick(CLIENTS, 2 + Math.floor(next() * 4));
  const servers = pick(SERVERS, 1 + Math.floor(next() * 2));
  const properties: Property[] = [];
  for (const c of clients) {
    for (const s of servers) {
      const roll = next();
      if (roll < 0.2) continue;
      const [src, dst] = next() < 0.8 ? [c, s] : [s, c];
      const ported =
        next() < 0.3 ? { lv4Proto: 'TCP' as const, dstPort: PORTS[Math.floor(next() * PORTS.length)] } : {};
      properties.push(roll < 0.6 ? isolation(src, dst, ported) : reachability(src, dst, ported));
    }
  }
  return { hosts: [...clients, ...servers], clients, servers, properties };
}

const octetsOf = (a: string) => a.split('.').map(Number);
const toInt = (o: number[]) => o.reduce((x, v) => x * 256 + v, 0);

/** Every octet pattern and CIDR prefix containing an address, as the set of the network's hosts it contains. */
function addressSets(hosts: string[]): { text: string; set: number }[] {
  const out = new Map<number, string>();
  for (const a of hosts) {
    const o = octetsOf(a);
    for (let mask = 0; mask < 16; mask++) {
      const pattern = o.map((v, k) => (mask & (1 << k) ? -1 : v));
      let set = 0;
      hosts.forEach((h, i) => {
        if (octetsOf(h).every((v, k) => pattern[k] === -1 || pattern[k] === v)) set |= 1 << i;
      });
      if (!out.has(set)) out.set(set, pattern.join('.'));
    }
    for (let length = 0; length <= 32; length++) {
      const size = 2 ** (32 - length);
      const start = Math.floor(toInt(o) / size) * size;
      let set = 0;
      hosts.forEach((h, i) => {
        if (toInt(octetsOf(h)) >= start && toInt(octetsOf(h)) < start + size) set |= 1 << i;
      });
      if (!out.has(set)) out.set(set, `${a}/${length}`);
    }
  }
  return [...out].map(([set, text]) => ({ set, text }));
}

interface Atom {
  src: number;
  dst: number;
  proto: 'TCP' | 'UDP' | 'OTHER';
  /** Destination port cell [lo, hi] (OTHER: none). */
  port?: [number, number];
}

const rangeOf = (p: string | undefined): [number, number] => {
  if (p === undefined || p === '*') return [0, 65535];
  const [lo, hi] = p.split('-').map(Number) as [number, number?];
  return [lo, hi ?? lo];
};

interface Rule {
  text: string;
  atoms: number;
  /** It takes part of a class (atoms that belong to the same requirements) and leaves the rest. */
  cuts: boolean;
}

/** The brute force's view of one case: atoms, each requirement's atoms, and every rule as a set of atoms. */
function atomsOf(c: Case): { atoms: Atom[]; required: { kind: Property['name']; atoms: number }[]; rules: Rule[] } {
  // Port cells: the elementary intervals between every port range's ends.
  const ranges = [[0, 65535] as [number, number], ...PORTS.map(rangeOf)];
  const ends = [...new Set(ranges.flatMap(([lo, hi]) => [lo, hi + 1]))].sort((a, b) => a - b);
  const cells: [number, number][] = ends.slice(0, -1).map((lo, k) => [lo, ends[k + 1]! - 1]);
  const atoms: Atom[] = [];
  const index = new Map<string, number>();
  const atomId = (a: Atom) => {
    const key = `${a.src} ${a.dst} ${a.proto} ${a.port?.join('-') ?? ''}`;
    if (!index.has(key)) index.set(key, atoms.push(a) - 1);
    return index.get(key)!;
  };
  const required = c.properties.map((p) => {
    const src = c.hosts.indexOf(p.src);
    const dst = c.hosts.indexOf(p.dst);
    const protos = p.lv4Proto && p.lv4Proto !== 'ANY' ? [p.lv4Proto] : (['TCP', 'UDP', 'OTHER'] as const);
    const [lo, hi] = rangeOf(p.dstPort);
    let set = 0;
    for (const proto of protos) {
      if (proto === 'OTHER') {
        if (lo === 0 && hi === 65535) set |= 2 ** atomId({ src, dst, proto });
        continue;
      }
      for (const cell of cells) if (cell[0] >= lo && cell[1] <= hi) set |= 2 ** atomId({ src, dst, proto, port: cell });
    }
    return { kind: p.name, atoms: set };
  });
  const addresses = addressSets(c.hosts);
  const portOptions = [
    '*',
    ...new Set(
      ranges
        .flatMap(([lo]) => ranges.map(([, hi]) => [lo, hi]))
        .filter(([lo, hi]) => lo! <= hi!)
        .map(([lo, hi]) => (lo === hi ? `${lo}` : `${lo}-${hi}`)),
    ),
  ];
  const portRanges = portOptions.map((port) => ({ port, range: rangeOf(port) }));
  // A rule's atoms are those between its addresses that its protocol and port take: each of the three a set of atoms
  // made once, and the rule's set their meet (the atoms were walked for every rule: most of this file's CPU).
  const atomSet = (holds: (a: Atom) => boolean) => atoms.reduce((set, a, k) => (holds(a) ? set | (2 ** k) : set), 0);
  const from = addresses.map((s) => atomSet((a) => (s.set & (1 << a.src)) !== 0));
  const to = addresses.map((d) => atomSet((a) => (d.set & (1 << a.dst)) !== 0));
  const taken = (['TCP', 'UDP', 'OTHER', 'ANY'] as const).map((proto) =>
    portRanges.map(({ range: [lo, hi] }) => {
      const ported = !(lo === 0 && hi === 65535);
      // A port condition holds TCP and UDP packets only; cells lie wholly inside or outside a range.
      return atomSet(
        (a) =>
          (proto === 'ANY' || proto === a.proto) &&
          !(ported && (a.port === undefined || a.port[0] < lo || a.port[1] > hi)),
      );
    }),
  );
  const byAtoms = new Map<number, string>();
  addresses.forEach((s, i) => {
    addresses.forEach((d, j) => {
      const between = from[i]! & to[j]!;
      (['TCP', 'UDP', 'OTHER', 'ANY'] as const).forEach((proto, p) => {
        portRanges.forEach(({ port, range: [lo, hi] }, r) => {
          if (!(lo === 0 && hi === 65535) && proto === 'OTHER') return;
          const set = between & taken[p]![r]!;
          if (set !== 0 && !byAtoms.has(set)) byAtoms.set(set, `${s.text} -> ${d.text} ${proto} ${port}`);
        });
      });
    });
  });
  // Classes as the engine sees them at the place: atoms that lie in the same requirements.
  const signature = new Map<number, number>();
  atoms.forEach((_, k) => {
    const inside = required.reduce((sig, r, i) => (r.atoms & (2 ** k) ? sig | (2 ** i) : sig), 0);
    signature.set(inside, (signature.get(inside) ?? 0) | (2 ** k));
  });
  const classes = [...signature.values()];
  const cutsClass = (set: number) => classes.some((c) => (c & set) !== 0 && (c & set) !== c);
  return { atoms, required, rules: [...byAtoms].map(([atoms, text]) => ({ atoms, text, cuts: cutsClass(atoms) })) };
}

/** The shortest valid list of at most `limit` rules (over a case's `atomsOf`), as text, or undefined if none. */
function shortestList(
  view: ReturnType<typeof atomsOf>,
  limit: number,
  whole: boolean,
): { length: number; list: string } | undefined {
  const { atoms, required, rules: every } = view;
  const rules = whole ? every.filter((r) => !r.cuts) : every;
  const all = 2 ** atoms.length - 1;
  const holds = (dropped: number) =>
    required.every((r) => {
      const passing = r.atoms & ~dropped & all;
      return r.kind === 'ISOLATION_PROPERTY' ? passing === 0 : passing !== 0;
    });
  // drop set of a list: each atom takes the action of the first rule that matches it, else the default.
  for (let length = 0; length <= limit; length++) {
    for (const deny of [false, true]) {
      const defaultDrops = deny ? all : 0;
      const say = (list: [Rule, boolean][]) =>
        `default ${deny ? 'DENY' : 'ALLOW'}: ${list.map(([r, d]) => `${d ? 'DENY' : 'ALLOW'} ${r.text}`).join('; ')}`;
      if (length === 0) {
        if (holds(defaultDrops)) return { length, list: say([]) };
        continue;
      }
      // The last rule's action differs from the default (a last rule agreeing with it changes nothing).
      const last = !deny;
      const recurse = (
        depth: number,
        matched: number,
        dropped: number,
        list: [Rule, boolean][],
      ): string | undefined => {
        if (depth === length) {
          return holds(dropped | (defaultDrops & ~matched)) ? say(list) : undefined;
        }
        for (const rule of rules) {
          const fresh = rule.atoms & ~matched;
          if (fresh === 0) continue; // shadowed: the list without it is shorter
          for (const action of depth === length - 1 ? [last] : [false, true]) {
            const found = recurse(depth + 1, matched | rule.atoms, action ? dropped | fresh : dropped, [
              ...list,
              [rule, action],
            ]);
            if (found) return found;
          }
        }
        return undefined;
      };
      const found = recurse(0, 0, 0, []);
      if (found) return { length, list: found };
    }
  }
  return undefined;
}

t.test('the rule count called minimal is never above the shortest valid list of up to 3 rules', async (t) => {
  let checked = 0;
  let withRules = 0;
  let beyondBruteForce = 0;
  let unsat = 0;
  let proven = 0;
  const cutting: string[] = [];
  for (let seed = 1; checked < NETWORKS; seed++) {
    const c = generate(seed);
    if (c.properties.length === 0) continue;
    // One brute-force view per case, for the size check and each list search.
    const view = atomsOf(c);
    if (view.atoms.length > MAX_ATOMS) continue;
    checked++;
    const nodes = [
      ...c.clients.map((a) => webclient(a, PLACE)),
      ...c.servers.map((a) => webserver(a, PLACE)),
      place(PLACE, ...c.hosts),
    ];
    // Every answer re-checked by the independent evaluator (checkedSimulate throws otherwise).
    const { report } = await checkedSimulate(network(nodes, c.properties));
    const ours = report.placements.find((p) => p.node === PLACE)?.rules ?? 0;
    const limit = Math.min(MAX_RULES, report.verdict === 'SAT' ? ours - 1 : MAX_RULES);
    if (report.verdict !== 'SAT') {
      unsat++;
      const any = shortestList(view, limit, false);
      t.equal(any, undefined, `seed ${seed}: UNSAT, but a valid list exists: ${any?.list}`);
      continue;
    }
    if (ours > 0) withRules++;
    if (ours > MAX_RULES) beyondBruteForce++;
    // Lists whose rules take each class wholly or not at all: the encoding's optimum, proven or not.
    const whole = shortestList(view, limit, true);
    if (whole) t.fail(`seed ${seed}: ${ours} rules, but ${whole.length} taking whole classes do: ${whole.list}`);
    // Every list, including rules that cut a class: none shorter where the answer is called minimal.
    const any = shortestList(view, limit, false);
    if (report.optimal) {
      proven++;
      if (any) t.fail(`seed ${seed}: ${ours} rules called minimal, but ${any.length} do: ${any.list}`);
    } else if (any) cutting.push(`seed ${seed}: ${ours} rules (not called minimal), ${any.length} do: ${any.list}`);
  }
  t.ok(checked >= 200, `${checked} networks checked`);
  t.comment(`${checked} networks: ${withRules} with rules, ${beyondBruteForce} above ${MAX_RULES}, ${unsat} UNSAT`);
  // Answers are proven over classes no rule cuts (refined where the first classes could be cut).
  t.ok(proven >= 180, `${proven} answers called minimal, each checked against every list`);
  t.comment(`not called minimal, and shorter with a rule that cuts a class: ${cutting.length}`);
  for (const line of cutting) t.comment(line);
});

t.test('a candidate formula past its bound is given up, with no clause written for it', async (t) => {
  const partition = new Partition();
  for (const port of [80, 443, 22]) partition.add(rewrite(rewrite(UNIVERSE, PROTO, [0, 0]), DPORT, [port, port]), true);
  const classes = partition.classes();
  const build = (bound?: CandidateBound) => {
    let variables = 0;
    const clauses: Term[][] = [];
    const sink = {
      fresh: () => ++variables,
      clause: (c: Term[]) => clauses.push(c),
      ruleCost: () => {},
      occurrence: () => 3,
    };
    const model = new RuleModel([{ defaultAction: 'ALLOW' } as NetNode], classes, sink);
    classes.forEach((_, k) => model.term(0, k, true));
    const before = clauses.length;
    model.finish(bound);
    return { abandoned: model.abandoned, written: clauses.length - before };
  };
  t.same(build().abandoned, false, 'no bound: built');
  t.ok(build().written > 0, 'no bound: clauses written');
  const abortAt = Date.now() + 60_000;
  t.same(build({ candidates: 1, work: new WorkPool(Infinity), abortAt }), { abandoned: true, written: 0 }, 'too many');
  const spent = build({ candidates: Infinity, work: new WorkPool(0), abortAt });
  t.same(spent, { abandoned: true, written: 0 }, "the proof's work spent");
  const late = () => build({ candidates: Infinity, work: new WorkPool(Infinity), abortAt: Date.now() - 1 });
  t.throws(late, { status: 504 }, 'past the time limit: SolverTimeout');
});

t.test('a search for candidates with an aim finds exactly the candidates of the whole search it allows', async (t) => {
  const partition = new Partition();
  for (const port of [80, 443, 22]) partition.add(rewrite(UNIVERSE, DPORT, [port, port]), true);
  for (const [lo, hi] of [
    [40, 40],
    [41, 41],
    [50, 50],
  ])
    partition.add(rewrite(UNIVERSE, SRC, [lo, hi]), true);
  const classes = partition.classes();
  t.ok(classes.length >= 8, `${classes.length} classes`);
  const covered = (aim: Aim) => candidateRules(classes, new Map(), [aim]).candidates[0]!.map((c) => c.covers.join(','));
  const everything = covered({ wanted: () => true, barred: () => false });
  for (const [wanted, barred] of [
    [[0], []],
    [[1, 2], [0]],
    [
      [3, 4, 5],
      [1, 6],
    ],
    [[], []],
  ] as const) {
    const allowed = everything.filter((key) => {
      const covers = key.split(',').map(Number);
      return covers.some((k) => wanted.includes(k)) && !covers.some((k) => barred.includes(k));
    });
    const aimed = covered({ wanted: (k) => wanted.includes(k), barred: (k) => barred.includes(k) });
    t.same(aimed, allowed, `wanted ${wanted.join(' ') || 'none'}, barred ${barred.join(' ') || 'none'}`);
  }
});

t.test('a search with several aims finds for each what a search with that aim alone finds', async (t) => {
  const partition = new Partition();
  for (const port of [80, 443, 22]) partition.add(rewrite(UNIVERSE, DPORT, [port, port]), true);
  for (const lo of [40, 41, 50]) partition.add(rewrite(UNIVERSE, SRC, [lo, lo]), true);
  partition.add(rewrite(UNIVERSE, PROTO, [1, 1]), true);
  const classes = partition.classes();
  const aim = (wanted: number[], barred: number[]): Aim => ({
    wanted: (k) => wanted.includes(k),
    barred: (k) => barred.includes(k),
  });
  const aims = [aim([0, 2, 5], [1]), aim([1, 3, 4], [0, 6]), aim([2, 3], [])];
  const together = candidateRules(classes, new Map(), aims).candidates;
  const alone = aims.map((a) => candidateRules(classes, new Map(), [a]).candidates[0]!);
  const sets = (list: (typeof together)[number]) => list.map((c) => [c.covers.join(','), c.cost]);
  aims.forEach((_, a) => t.same(sets(together[a]!), sets(alone[a]!), `aim ${a}: the same covered sets and costs`));
  const rules = (list: (typeof together)[number]) => list.map((c) => c.rules());
  t.same(rules(together[0]!), rules(alone[0]!), 'the first aim names its rules as alone');
  // A covered set found for several aims is one candidate, the first aim's.
  let shared = 0;
  together.forEach((list, b) => {
    for (const c of list) {
      const key = c.covers.join(',');
      const earlier = together.slice(0, b).find((l) => l.some((d) => d.covers.join(',') === key));
      if (!earlier) continue;
      shared++;
      t.equal(
        c,
        earlier.find((d) => d.covers.join(',') === key),
        `aim ${b}: ${key} is the earlier aim's candidate`,
      );
    }
  });
  t.ok(shared > 0, `${shared} candidates shared between aims`);
});

t.test('the fewest rules may take a class left free, never one that must keep the default', async (t) => {
  // Sources 40, 41, 42 and 43.-1.-1.-1 are the four classes. 40 and 42 need a rule: with 41 and 43 free,
  // 40.0.0.0/6 takes all four; with 41 bound to the default, two rules; with 43 bound, /6 is barred too.
  const partition = new Partition();
  for (const octet of [40, 41, 42, 43]) partition.add(rewrite(UNIVERSE, SRC, [octet, octet]), true);
  const classes = partition.classes();
  const octet = classes.map((c) => c.boxes[0]![2 * SRC]!);
  t.same([...octet].sort(), [40, 41, 42, 43], 'four classes by source');
  const fewest = (free: number[]) => {
    const exception = octet.map((o) => (o === 40 || o === 42 ? true : free.includes(o) ? undefined : false));
    const found = fewestRules(classes, exception, unbounded(Infinity))!;
    const taken = [...found.taken].map((k) => octet[k]!).sort();
    t.ok(!taken.some((o) => exception[octet.indexOf(o)] === false), `free ${free.join(' ')}: nothing bound taken`);
    return { rules: found.elements.map((r) => r.source), taken };
  };
  t.same(fewest([41, 43]), { rules: ['40.0.0.0/6'], taken: [40, 41, 42, 43] }, '41 and 43 free: one rule');
  t.same(fewest([43]).rules.length, 2, '41 bound: two rules');
  t.same(fewest([41]).rules.length, 2, '43 bound: /6 would take it, two rules');
  t.same(fewest([]).taken, [40, 42], 'nothing free: exactly the classes that need the rule');
});

t.test('the candidates offered meet any needs as cheaply as all of them (brute force over every list)', async (t) => {
  const next = random(7);
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  let smaller = 0;
  let solvable = 0;
  for (let trial = 0; trial < 300; trial++) {
    const size = 5 + Math.floor(next() * 4);
    // What each class may do: 'never' take the other action; 'free' (no need loses by it); 'maybe'. Not wanted: no
    // need gains by it. The needs are clauses over "class k takes the other action" with those polarities only.
    const known = Array.from({ length: size }, () => pick(['never', 'free', 'maybe', 'maybe'] as const));
    const wanted = Array.from({ length: size }, () => next() < 0.6);
    const needs: number[][] = [];
    for (let c = 0; c < 2 + Math.floor(next() * 4); c++) {
      const clause: number[] = [];
      for (let l = 0; l < 1 + Math.floor(next() * 3); l++) {
        const k = Math.floor(next() * size);
        const polarities = [...(wanted[k] ? [k + 1] : []), ...(known[k] === 'maybe' ? [-(k + 1)] : [])];
        if (polarities.length > 0) clause.push(pick(polarities));
      }
      if (clause.length > 0) needs.push(clause);
    }
    const bySet = new Map<string, Candidate>();
    for (let c = 0; c < 12; c++) {
      const covers = [...Array(size).keys()].filter(() => next() < 0.35);
      if (covers.length > 0) bySet.set(covers.join(','), { covers, cost: next() < 0.8 ? 1 : 2, rules: () => [] });
    }
    const all = [...bySet.values()];
    const kept = offered(all, known, size, (k) => wanted[k]!);
    t.ok(
      kept.every((c) => all.includes(c)),
      'offered candidates are among those given',
    );
    if (kept.length < all.length) smaller++;
    // The cheapest list: every subset, the classes its candidates cover taking the other action.
    const cheapest = (list: Candidate[]) => {
      let best = Infinity;
      for (let mask = 0; mask < 1 << list.length; mask++) {
        const taken = new Set<number>();
        let cost = 0;
        list.forEach((c, i) => {
          if (!(mask & (1 << i))) return;
          cost += c.cost;
          for (const k of c.covers) taken.add(k);
        });
        if (cost >= best || [...taken].some((k) => known[k] === 'never')) continue;
        if (needs.every((clause) => clause.some((l) => (l > 0 ? taken.has(l - 1) : !taken.has(-l - 1))))) best = cost;
      }
      return best;
    };
    const optimum = cheapest(all);
    if (optimum < Infinity) solvable++;
    t.equal(cheapest(kept), optimum, `trial ${trial}: ${kept.length} of ${all.length} candidates kept`);
  }
  t.ok(smaller >= 100, `${smaller} of 300 trials offered fewer candidates`);
  t.ok(solvable >= 100, `${solvable} of 300 trials have a list`);
});

t.test('offered keeps exactly the undominated candidates, one of each equal kind, whatever their order', async (t) => {
  const next = random(11);
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  for (let trial = 0; trial < 40; trial++) {
    // Past one 32-bit word of classes, and many candidates, so that both ways of finding a dominator are taken.
    const size = 20 + Math.floor(next() * 80);
    const known = Array.from({ length: size }, () => pick(['never', 'free', 'always', 'maybe', 'maybe'] as const));
    const wanted = Array.from({ length: size }, () => next() < 0.5);
    const density = 0.03 + next() * 0.2;
    const bySet = new Map<string, Candidate>();
    for (let c = 0; c < 400; c++) {
      const covers = [...Array(size).keys()].filter(() => next() < density);
      if (covers.length > 0) bySet.set(covers.join(','), { covers, cost: next() < 0.7 ? 1 : 2, rules: () => [] });
    }
    const all = [...bySet.values()];
    const kept = offered(all, known, size, (k) => wanted[k]!);
    // The reference, pair by pair: d dominates e where both cover the same classes that are neither free (or
    // always) nor unwanted, d covers each free or always class e covers that is wanted, e covers each unwanted class
    // d covers that is not free or always, and d costs no more.
    const up = (k: number) => known[k] === 'free' || known[k] === 'always';
    const open = (c: Candidate) => c.covers.filter((k) => !up(k) && wanted[k]).join(',');
    const dominates = (d: Candidate, e: Candidate) =>
      d !== e &&
      d.cost <= e.cost &&
      open(d) === open(e) &&
      e.covers.every((k) => !(up(k) && wanted[k]) || d.covers.includes(k)) &&
      d.covers.every((k) => up(k) || wanted[k] || e.covers.includes(k));
    const usable = all.filter((c) => c.covers.every((k) => known[k] !== 'never'));
    t.ok(
      usable.every((e) => kept.includes(e) || kept.some((d) => dominates(d, e))),
      `trial ${trial}: every candidate left out has a kept one dominating it`,
    );
    t.ok(
      kept.every((e) => usable.includes(e) && !kept.some((d) => dominates(d, e))),
      `trial ${trial}: no kept candidate is dominated by another kept one (${kept.length} of ${usable.length})`,
    );
    const shuffled = [...all].sort(() => next() - 0.5);
    t.same(new Set(offered(shuffled, known, size, (k) => wanted[k]!)), new Set(kept), `trial ${trial}: any order`);
  }
});
