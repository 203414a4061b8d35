/**
 * An independent checker of placement answers: it shares no code with src/engine/placement (only the input and
 * answer types). From the raw input it derives again which nodes are placed, transparent or external (P2), where
 * each may go (P3, P4), the host distances (Floyd-Warshall over the mirrored connections, P5), the links (P6) and the
 * LinkMetrics routes (P7), and re-checks every claim of an answer against them. `bruteForce` enumerates every
 * placement of small inputs for the least (active hosts, total latency).
 */
import type { PlacementInput } from '../../../src/engine/placement/input.js';
import type { PlacementOutcome } from '../../../src/engine/placement/index.js';

interface CheckNode {
  name: string;
  kind: string;
  type: string;
  next: string[];
}

interface Derived {
  nodes: Map<string, CheckNode>;
  order: string[];
  pinOf: Map<string, string>;
  placed: string[];
  transparent: string[];
  external: string[];
  demand: Map<string, { cores: number; memory: number; storage: number; ops: number; latency?: number }>;
  hosts: string[];
  hostOf: Map<string, PlacementInput['hosts'][number]>;
  dist: (a: string, b: string) => number;
  /** Least hop count among least-latency paths. */
  hops: (a: string, b: string) => number;
  links: [string, string][];
  /** Per LinkMetrics entry: undefined when not applicable, else the placed-node sequences of its routes. */
  chains: ({ seq: string[]; route: string[] }[] | undefined)[];
  edges: Map<string, number>;
}

const pair = (a: string, b: string) => `${a}\u0000${b}`;

/** A LinkMetrics route may pass places, optional firewalls and firewalls (P7; a resubmitted allocated one). */
const isInner = (n: CheckNode) => n.kind === 'place' || n.kind === 'optional' || n.type === 'FIREWALL';

/** value <= limit * cpu * 1e9 for cpu read as the decimal it prints as: compared as fractions over BigInt. */
function runsInTime(ops: number, limit: number | undefined, cpu: number): boolean {
  if (limit === undefined) return true;
  const text = String(cpu);
  const [mantissa, exponent] = text.toLowerCase().split('e');
  const [whole, fraction = ''] = mantissa!.split('.');
  let numerator = BigInt(whole! + fraction);
  let denominator = 10n ** BigInt(fraction.length);
  const e = Number(exponent ?? 0);
  if (e >= 0) numerator *= 10n ** BigInt(e);
  else denominator *= 10n ** BigInt(-e);
  return BigInt(ops) * denominator <= BigInt(limit) * numerator * 1_000_000_000n;
}

function derive(input: PlacementInput): Derived {
  const nodes = new Map<string, CheckNode>();
  const order: string[] = [];
  for (const g of input.graphs) {
    for (const n of g.nodes) {
      const known = nodes.get(n.name);
      if (known) {
        for (const x of n.neighbours) if (!known.next.includes(x)) known.next.push(x);
        continue;
      }
      nodes.set(n.name, {
        name: n.name,
        kind: n.kind,
        type: n.kind === 'place' ? 'FIREWALL' : n.functionalType!,
        next: [...n.neighbours],
      });
      order.push(n.name);
    }
  }
  const pinOf = new Map<string, string>();
  for (const h of input.hosts) {
    if (h.fixedEndpoint !== undefined) pinOf.set(h.fixedEndpoint, h.name);
    for (const r of h.nodeRef ?? []) pinOf.set(r.node, h.name);
  }
  const used = new Set(input.used);
  const role = (n: CheckNode) =>
    n.kind === 'function'
      ? 'placed'
      : n.kind === 'endhost'
        ? pinOf.has(n.name)
          ? 'placed'
          : 'external'
        : used.has(n.name)
          ? 'placed'
          : 'transparent';
  const placed = order.filter((x) => role(nodes.get(x)!) === 'placed');
  const transparent = order.filter((x) => role(nodes.get(x)!) === 'transparent');
  const external = order.filter((x) => role(nodes.get(x)!) === 'external');

  const metrics = input.nodeMetrics ?? [];
  const octets = (s: string) => s.split('.').map(Number);
  const demand = new Map<string, { cores: number; memory: number; storage: number; ops: number; latency?: number }>();
  for (const x of order) {
    let m = metrics.find((e) => e.node === x);
    if (!m && nodes.get(x)!.kind === 'place' && /^\d+\.\d+\.\d+\.\d+$/.test(x)) {
      const mine = octets(x);
      let bestWild = 5;
      for (const e of metrics) {
        if (!/^(\d+|-1)\.(\d+|-1)\.(\d+|-1)\.(\d+|-1)$/.test(e.node) || !e.node.includes('-1')) continue;
        const theirs = octets(e.node);
        if (!theirs.every((o, i) => o === -1 || o === mine[i])) continue;
        const wild = theirs.filter((o) => o === -1).length;
        if (wild < bestWild) [bestWild, m] = [wild, e];
      }
    }
    demand.set(x, {
      cores: m?.cores ?? 0,
      memory: m?.memory ?? 0,
      storage: m?.reqStorage ?? 0,
      ops: m?.nrOfOperations ?? 0,
      latency: m?.maxNodeLatency,
    });
  }

  const hosts = input.hosts.map((h) => h.name);
  const hostOf = new Map(input.hosts.map((h) => [h.name, h]));
  const edges = new Map<string, number>();
  for (const c of input.connections) edges.set(pair(c.sourceHost, c.destHost), c.avgLatency!);
  for (const c of input.connections)
    if (!edges.has(pair(c.destHost, c.sourceHost))) edges.set(pair(c.destHost, c.sourceHost), c.avgLatency!);
  // Floyd-Warshall on (latency, hops) pairs over the mirrored connections, on host positions.
  const n = hosts.length;
  const at = new Map(hosts.map((h, k) => [h, k]));
  const latencies = hosts.map((a) => hosts.map((b) => (a === b ? 0 : (edges.get(pair(a, b)) ?? Infinity))));
  const steps = hosts.map((a) => hosts.map((b) => (a === b ? 0 : edges.has(pair(a, b)) ? 1 : Infinity)));
  for (let k = 0; k < n; k++)
    for (let a = 0; a < n; a++)
      for (let b = 0; b < n; b++) {
        const d = latencies[a]![k]! + latencies[k]![b]!;
        const h = steps[a]![k]! + steps[k]![b]!;
        if (d < latencies[a]![b]! || (d === latencies[a]![b]! && h < steps[a]![b]!)) {
          latencies[a]![b] = d;
          steps[a]![b] = h;
        }
      }
  const dist = (a: string, b: string) => latencies[at.get(a)!]![at.get(b)!]!;
  const hops = (a: string, b: string) => steps[at.get(a)!]![at.get(b)!]!;

  const isPlaced = new Set(placed);
  const isTransparent = new Set(transparent);
  const links: [string, string][] = [];
  for (const u of placed) {
    const reached = new Set<string>();
    const visited = new Set<string>([u]);
    const queue = [...nodes.get(u)!.next];
    while (queue.length) {
      const w = queue.shift()!;
      if (visited.has(w)) continue;
      visited.add(w);
      if (isPlaced.has(w)) reached.add(w);
      else if (isTransparent.has(w)) queue.push(...nodes.get(w)!.next);
    }
    for (const v of placed) if (reached.has(v)) links.push([u, v]);
  }

  const chains = (input.linkMetrics ?? []).map((m) => {
    if (!isPlaced.has(m.src) || !isPlaced.has(m.dst)) return undefined;
    const routes: string[][] = [];
    const walk = (path: string[]) => {
      for (const x of nodes.get(path.at(-1)!)!.next) {
        if (x === m.dst) routes.push([...path, x]);
        else if (!path.includes(x) && isInner(nodes.get(x)!)) walk([...path, x]);
      }
    };
    walk([m.src]);
    return routes.map((route) => ({ seq: route.filter((x) => isPlaced.has(x)), route }));
  });
  return {
    nodes,
    order,
    pinOf,
    placed,
    transparent,
    external,
    demand,
    hosts,
    hostOf,
    dist,
    hops,
    links,
    chains,
    edges,
  };
}

/** Why node x cannot go on host h on its own, or undefined. */
function ineligible(d: Derived, x: string, h: string): string | undefined {
  const n = d.nodes.get(x)!;
  const host = d.hostOf.get(h)!;
  const type = host.type ?? 'MIDDLEBOX';
  const pin = d.pinOf.get(x);
  if (pin !== undefined && pin !== h) return `pinned to ${pin}`;
  if (n.kind === 'endhost') {
    if (type === 'MIDDLEBOX') return 'end host on a middlebox';
  } else {
    if (type !== 'MIDDLEBOX') return 'function off a middlebox';
    if (!(host.supportedVNF ?? []).some((s) => s.functionalType === n.type)) return `${n.type} not supported`;
    if (host.maxVNF !== undefined && host.maxVNF < 1) return 'maxVNF';
  }
  const dem = d.demand.get(x)!;
  if (dem.cores > host.cores! || dem.memory > host.memory! || dem.storage > host.diskStorage!) return 'too big';
  if (!runsInTime(dem.ops, dem.latency, host.cpu!)) return 'too slow';
  return undefined;
}

/** Every violation of P3-P7 (and of the answer's own accounts) in a placement answer. */
export function violations(input: PlacementInput, outcome: PlacementOutcome): string[] {
  const d = derive(input);
  const out: string[] = [];
  const same = (what: string, got: unknown, want: unknown) => {
    if (JSON.stringify(got) !== JSON.stringify(want))
      out.push(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  };
  same('external', outcome.external, d.external);
  same('transparent', outcome.transparent, d.transparent);
  if (outcome.status !== 'placed') {
    if (outcome.status === 'infeasible' && outcome.conflicts.length === 0) out.push('infeasible without a conflict');
    return out;
  }
  same(
    'placed nodes',
    outcome.nodes.map((n) => n.node),
    d.placed,
  );
  const where = new Map(outcome.nodes.map((n) => [n.node, n.host]));
  for (const x of d.placed) {
    const h = where.get(x);
    if (h === undefined || !d.hostOf.has(h)) {
      out.push(`${x} has no host`);
      continue;
    }
    const why = ineligible(d, x, h);
    if (why) out.push(`${x} on ${h}: ${why}`);
  }
  if (out.length) return out;
  const usage = new Map<string, { cores: number; memory: number; storage: number; vnfs: number; nodes: string[] }>();
  for (const x of d.placed) {
    const h = where.get(x)!;
    const u = usage.get(h) ?? { cores: 0, memory: 0, storage: 0, vnfs: 0, nodes: [] };
    const dem = d.demand.get(x)!;
    u.cores += dem.cores;
    u.memory += dem.memory;
    u.storage += dem.storage;
    u.vnfs += d.nodes.get(x)!.kind === 'endhost' ? 0 : 1;
    u.nodes.push(x);
    usage.set(h, u);
  }
  for (const [h, u] of usage) {
    const host = d.hostOf.get(h)!;
    if (u.cores > host.cores!) out.push(`${h}: cores ${u.cores} > ${host.cores}`);
    if (u.memory > host.memory!) out.push(`${h}: memory ${u.memory} > ${host.memory}`);
    if (u.storage > host.diskStorage!) out.push(`${h}: diskStorage ${u.storage} > ${host.diskStorage}`);
    if (host.maxVNF !== undefined && u.vnfs > host.maxVNF)
      out.push(`${h}: ${u.vnfs} functions > maxVNF ${host.maxVNF}`);
  }
  same(
    'host usage',
    outcome.hosts,
    d.hosts
      .filter((h) => usage.has(h))
      .map((h) => {
        const u = usage.get(h)!;
        const host = d.hostOf.get(h)!;
        return {
          host: h,
          nodes: u.nodes,
          cores: [u.cores, host.cores],
          memory: [u.memory, host.memory],
          diskStorage: [u.storage, host.diskStorage],
          vnfs: [u.vnfs, host.maxVNF ?? null],
        };
      }),
  );
  const distance = (a: string, b: string) => d.dist(where.get(a)!, where.get(b)!);
  let total = 0;
  same(
    'links',
    outcome.links.map((l) => [l.src, l.dst]),
    d.links,
  );
  for (const l of outcome.links) {
    const want = distance(l.src, l.dst);
    total += want;
    if (want === Infinity) out.push(`link ${l.src} -> ${l.dst}: hosts not connected`);
    if (l.latency !== want) out.push(`link ${l.src} -> ${l.dst}: latency ${l.latency}, want ${want}`);
    out.push(...pathProblems(d, `link ${l.src} -> ${l.dst}`, l.hostPath, where.get(l.src)!, where.get(l.dst)!));
  }
  same('objective', outcome.objective, { activeHosts: usage.size, totalLatency: total });
  (input.linkMetrics ?? []).forEach((m, i) => {
    const got = outcome.linkMetrics[i];
    const chains = d.chains[i];
    if (!got) return out.push(`LinkMetrics ${i} missing`);
    if (!chains) {
      if (!got.status.startsWith('n/a')) out.push(`LinkMetrics ${m.src} -> ${m.dst} should not apply`);
      return;
    }
    let worst = -1;
    for (const c of chains) {
      let sum = 0;
      for (let k = 1; k < c.seq.length; k++) sum += distance(c.seq[k - 1]!, c.seq[k]!);
      worst = Math.max(worst, sum);
      if (m.reqLatency !== undefined && sum > m.reqLatency)
        out.push(`LinkMetrics ${m.src} -> ${m.dst}: route ${c.route.join(',')} has latency ${sum} > ${m.reqLatency}`);
    }
    if (got.status !== 'ok' || got.latency !== worst) out.push(`LinkMetrics ${m.src} -> ${m.dst}: got ${got.latency}`);
  });
  const lb = outcome.lowerBound;
  if (lb.activeHosts > outcome.objective.activeHosts || lb.totalLatency > outcome.objective.totalLatency)
    out.push('lower bound above the objective');
  if (outcome.optimal) same('lower bound of an optimal answer', lb, outcome.objective);
  return out;
}

/** A shown host path must be a path of least latency, then fewest hops, then the smallest host sequence. */
function pathProblems(d: Derived, what: string, path: string[], from: string, to: string): string[] {
  if (path[0] !== from || path.at(-1) !== to) return [`${what}: host path ${path.join(',')} does not join its hosts`];
  let latency = 0;
  for (let k = 1; k < path.length; k++) {
    const step = d.edges.get(pair(path[k - 1]!, path[k]!));
    if (step === undefined) return [`${what}: no connection ${path[k - 1]} -> ${path[k]}`];
    latency += step;
  }
  if (latency !== d.dist(from, to)) return [`${what}: host path latency ${latency} is not the least`];
  if (path.length - 1 !== d.hops(from, to)) return [`${what}: host path has more hops than needed`];
  // The smallest host sequence (document order) among least-latency, fewest-hop simple paths, by enumeration.
  const index = new Map(d.hosts.map((h, k) => [h, k]));
  let best: string[] | undefined;
  const lexLess = (a: number[], b: number[]) => {
    const k = a.findIndex((x, i) => x !== b[i]);
    return k >= 0 && a[k]! < b[k]!;
  };
  const walk = (at: string[], sum: number) => {
    const last = at.at(-1)!;
    if (last === to) {
      const key = (p: string[]) => p.map((h) => index.get(h)!);
      if (sum === latency && at.length === path.length && (!best || lexLess(key(at), key(best)))) best = [...at];
      return;
    }
    if (at.length >= path.length) return;
    for (const h of d.hosts) {
      const step = d.edges.get(pair(last, h));
      if (step !== undefined && !at.includes(h)) walk([...at, h], sum + step);
    }
  };
  if (d.hosts.length <= 8) {
    walk([from], 0);
    if (best && best.join(',') !== path.join(','))
      return [`${what}: host path ${path.join(',')}, want ${best.join(',')}`];
  }
  return [];
}

/** The least (active hosts, total latency) over every placement, or undefined when there is none. */
export function bruteForce(input: PlacementInput): { activeHosts: number; totalLatency: number } | undefined {
  const d = derive(input);
  const nodes = d.placed;
  const options = nodes.map((x) => d.hosts.filter((h) => ineligible(d, x, h) === undefined));
  const at = new Map<string, string>();
  const load = new Map<string, { cores: number; memory: number; storage: number; vnfs: number; count: number }>();
  let best: { activeHosts: number; totalLatency: number } | undefined;
  const dist = (a: string, b: string) => d.dist(at.get(a)!, at.get(b)!);
  const leaf = () => {
    let total = 0;
    for (const [u, v] of d.links) {
      const x = dist(u, v);
      if (x === Infinity) return;
      total += x;
    }
    for (let i = 0; i < d.chains.length; i++) {
      const req = input.linkMetrics![i]!.reqLatency;
      if (!d.chains[i] || req === undefined) continue;
      for (const c of d.chains[i]!) {
        let sum = 0;
        for (let k = 1; k < c.seq.length; k++) sum += dist(c.seq[k - 1]!, c.seq[k]!);
        if (sum > req) return;
      }
    }
    const active = [...load.values()].filter((l) => l.count > 0).length;
    if (!best || active < best.activeHosts || (active === best.activeHosts && total < best.totalLatency))
      best = { activeHosts: active, totalLatency: total };
  };
  const place = (i: number) => {
    if (i === nodes.length) return leaf();
    const x = nodes[i]!;
    const dem = d.demand.get(x)!;
    const fn = d.nodes.get(x)!.kind === 'endhost' ? 0 : 1;
    for (const h of options[i]!) {
      const host = d.hostOf.get(h)!;
      const l = load.get(h) ?? { cores: 0, memory: 0, storage: 0, vnfs: 0, count: 0 };
      if (l.cores + dem.cores > host.cores! || l.memory + dem.memory > host.memory!) continue;
      if (l.storage + dem.storage > host.diskStorage!) continue;
      if (host.maxVNF !== undefined && l.vnfs + fn > host.maxVNF) continue;
      load.set(h, {
        cores: l.cores + dem.cores,
        memory: l.memory + dem.memory,
        storage: l.storage + dem.storage,
        vnfs: l.vnfs + fn,
        count: l.count + 1,
      });
      at.set(x, h);
      place(i + 1);
      at.delete(x);
      load.set(h, l);
    }
  };
  place(0);
  return best;
}
