/**
 * A partial placement and everything the search derives from it incrementally: residual capacities, active hosts,
 * the latency of links with both ends placed, for every position the latency it would add on each candidate host,
 * and the bounds of one search node (`scan`).
 *
 * Every update is order-independent (assign and unassign in any order leave the same state), so the local moves
 * of the heuristic and the depth-first search share it.
 */
import type { SearchModel } from './model.js';

const RESOURCES = 4;

export interface ScanResult {
  /** The unassigned position with the fewest candidates (ties: the largest demand, then the lowest position). */
  pick: number;
  /** At least this many hosts must still be opened. */
  newHosts: number;
  /** At least this much latency must still be added. */
  latency: number;
}

export class PlacementState {
  readonly hostOf: Int32Array;
  readonly load: Int32Array;
  active = 0;
  latency = 0;
  private readonly residual: Float64Array[];
  private readonly demand: Float64Array[];
  private readonly capacity: Float64Array[];
  /**
   * Hosts some unpinned node may use, and their largest capacity per resource: what one more host can add at most
   * for the unpinned demand (pinned nodes go where their pin says, often CLIENT or SERVER hosts no function uses).
   */
  private readonly absorbing: Uint8Array;
  private readonly largest: Float64Array;
  private readonly free: Uint8Array;
  /** cost[p][k]: latency of p's links to placed nodes if p went on its k-th candidate. */
  readonly cost: Float64Array[];
  private readonly outLinks: Int32Array[];
  private readonly inLinks: Int32Array[];
  private readonly minPair: Float64Array;
  /** Least latency of the links whose ends are both unplaced. */
  private pairLatency = 0;
  private readonly chainRefs: { chain: number; layer: number }[][];
  private readonly groupPart: Int32Array;
  private readonly groupCount: Int32Array;
  /**
   * Unpinned demand still unplaced; on active absorbing hosts: their capacity (finite part, and how many are
   * unbounded) and the demand placed there.
   */
  private readonly remaining = new Float64Array(RESOURCES);
  private readonly absorbCapacity = new Float64Array(RESOURCES);
  private readonly absorbUnbounded = new Int32Array(RESOURCES);
  private readonly absorbPlaced = new Float64Array(RESOURCES);
  readonly unassigned: Int32Array;
  unassignedCount: number;
  private readonly where: Int32Array;
  private readonly classMembers: Int32Array[];
  /** Smallest empty host of each class, -1 when all are active. */
  readonly classFirstEmpty: Int32Array;
  /** Capacity of each host relative to the largest of its kind, summed over resources: how much it can take. */
  readonly room: Float64Array;
  /** Demand of each position relative to the largest capacities: the larger first among equally constrained. */
  private readonly size: Float64Array;
  /** Candidate scans done: the search's measure of work (deterministic, unlike time). */
  work = 0;
  // Scratch space of `scan`.
  private readonly count: Int32Array;
  private readonly needNew: Int32Array;
  private readonly mark: Int32Array;
  private stamp = 0;
  private readonly partMark: Int32Array;

  constructor(readonly model: SearchModel) {
    const m = model;
    const H = m.hostCount;
    const N = m.nodeCount;
    this.hostOf = new Int32Array(N).fill(-1);
    this.load = new Int32Array(H);
    this.demand = [m.cores, m.memory, m.storage, Float64Array.from(m.isFunction)];
    this.capacity = [m.capCores, m.capMemory, m.capStorage, m.capVnf];
    this.residual = this.capacity.map((c) => Float64Array.from(c));
    const nodes = m.instance.problem.nodes;
    this.free = Uint8Array.from(m.instance.placed, (k) => (nodes[k]!.pin ? 0 : 1));
    this.absorbing = new Uint8Array(H);
    m.domains.forEach((d, p) => {
      if (this.free[p]) for (const h of d) this.absorbing[h] = 1;
    });
    this.largest = Float64Array.from(this.capacity, (c) =>
      c.reduce((most, x, h) => (this.absorbing[h] ? Math.max(most, x) : most), 0),
    );
    const scale = this.capacity.map((c) => c.reduce((most, x) => (x < Infinity ? Math.max(most, x) : most), 0));
    const relative = (x: number, r: number) => (x === Infinity ? 1 : scale[r]! > 0 ? x / scale[r]! : 0);
    this.room = Float64Array.from({ length: H }, (_, h) =>
      this.capacity.reduce((sum, c, r) => sum + relative(c[h]!, r), 0),
    );
    this.size = Float64Array.from({ length: N }, (_, p) =>
      this.demand.reduce((sum, d, r) => sum + relative(d[p]!, r), 0),
    );
    this.cost = m.domains.map((d) => new Float64Array(d.length));
    const outs: number[][] = Array.from({ length: N }, () => []);
    const ins: number[][] = Array.from({ length: N }, () => []);
    for (let i = 0; i < m.linkFrom.length; i++) {
      outs[m.linkFrom[i]!]!.push(i);
      ins[m.linkTo[i]!]!.push(i);
    }
    this.outLinks = outs.map((l) => Int32Array.from(l));
    this.inLinks = ins.map((l) => Int32Array.from(l));
    this.minPair = Float64Array.from(m.linkFrom, (u, i) => this.leastPair(u, m.linkTo[i]!));
    this.pairLatency = this.minPair.reduce((a, b) => a + b, 0);
    this.chainRefs = Array.from({ length: N }, () => []);
    m.chains.forEach((c, chain) => c.positions.forEach((p, layer) => this.chainRefs[p]!.push({ chain, layer })));
    this.groupPart = new Int32Array(m.groups).fill(-1);
    this.groupCount = new Int32Array(m.groups);
    for (let r = 0; r < RESOURCES; r++)
      this.remaining[r] = this.demand[r]!.reduce((sum, d, p) => (this.free[p] ? sum + d : sum), 0);
    this.unassigned = Int32Array.from({ length: N }, (_, p) => p);
    this.where = Int32Array.from({ length: N }, (_, p) => p);
    this.unassignedCount = N;
    const classes = m.hostClass.reduce((a, b) => Math.max(a, b + 1), 0);
    const members: number[][] = Array.from({ length: classes }, () => []);
    m.hostClass.forEach((c, h) => members[c]!.push(h));
    this.classMembers = members.map((l) => Int32Array.from(l));
    this.classFirstEmpty = Int32Array.from(this.classMembers, (l) => l[0] ?? -1);
    this.count = new Int32Array(N);
    this.needNew = new Int32Array(N);
    this.mark = new Int32Array(H);
    this.partMark = new Int32Array(m.graph.parts);
  }

  /** A lower bound on a link's latency wherever its ends go: 0 when they can share a host. */
  private leastPair(u: number, v: number): number {
    const du = this.model.domains[u]!;
    const dv = this.model.domains[v]!;
    const n = this.model.hostCount;
    const dist = this.model.graph.dist;
    // Past this many pairs the bound is left at 0 (still a bound) to keep preparation linear-ish.
    if (du.length * dv.length > 250_000) return 0;
    let best = Infinity;
    for (const a of du) for (const b of dv) best = Math.min(best, dist[a * n + b]!);
    return best === Infinity ? 0 : best;
  }

  /** Position of host h among p's candidates (binary search), -1 when it is not one. */
  slot(p: number, h: number): number {
    const d = this.model.domains[p]!;
    let lo = 0;
    let hi = d.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (d[mid]! < h) lo = mid + 1;
      else if (d[mid]! > h) hi = mid - 1;
      else return mid;
    }
    return -1;
  }

  private chainBound(chain: number, layer: number, h: number): number {
    const c = this.model.chains[chain]!;
    const n = this.model.hostCount;
    const dist = this.model.graph.dist;
    let bound = 0;
    let prev = -1;
    let last = 0;
    for (let i = 0; i < c.positions.length; i++) {
      const at = i === layer ? h : this.hostOf[c.positions[i]!]!;
      if (at < 0) continue;
      bound = prev < 0 ? c.forward[i]![at]! : bound + dist[prev * n + at]!;
      prev = at;
      last = i;
    }
    return bound + c.backward[last]![prev]!;
  }

  /** Whether unplaced p may go on h now: capacity, maxVNF, its group's part, LinkMetrics chains. */
  fits(p: number, h: number): boolean {
    const m = this.model;
    if (m.cores[p]! > this.residual[0]![h]! || m.memory[p]! > this.residual[1]![h]!) return false;
    if (m.storage[p]! > this.residual[2]![h]!) return false;
    if (m.isFunction[p] && this.residual[3]![h]! < 1) return false;
    const g = m.group[p]!;
    if (this.groupCount[g]! > 0 && m.graph.part[h] !== this.groupPart[g]) return false;
    for (const ref of this.chainRefs[p]!) {
      if (this.chainBound(ref.chain, ref.layer, h) > m.chains[ref.chain]!.bound) return false;
    }
    return true;
  }

  /** Adds (sign 1) or removes (sign -1) p on h's share of every link of p. */
  private links(p: number, h: number, sign: number) {
    const m = this.model;
    const n = m.hostCount;
    const dist = m.graph.dist;
    for (let side = 0; side < 2; side++) {
      const list = side === 0 ? this.outLinks[p]! : this.inLinks[p]!;
      for (const i of list) {
        const q = side === 0 ? m.linkTo[i]! : m.linkFrom[i]!;
        const hq = this.hostOf[q]!;
        if (hq >= 0) this.latency += sign * (side === 0 ? dist[h * n + hq]! : dist[hq * n + h]!);
        else this.pairLatency -= sign * this.minPair[i]!;
        const dq = m.domains[q]!;
        const cq = this.cost[q]!;
        for (let k = 0; k < dq.length; k++) {
          // Hosts in another part are never candidates while p is placed: their cost does not matter.
          const d = side === 0 ? dist[h * n + dq[k]!]! : dist[dq[k]! * n + h]!;
          if (d !== Infinity) cq[k]! += sign * d;
        }
      }
    }
  }

  private capacityOf(h: number, sign: number) {
    if (!this.absorbing[h]) return;
    for (let r = 0; r < RESOURCES; r++) {
      const c = this.capacity[r]![h]!;
      if (c === Infinity) this.absorbUnbounded[r]! += sign;
      else this.absorbCapacity[r]! += sign * c;
    }
  }

  assign(p: number, h: number) {
    const m = this.model;
    this.hostOf[p] = h;
    if (this.load[h]++ === 0) {
      this.active++;
      this.capacityOf(h, 1);
      const c = m.hostClass[h]!;
      if (this.classFirstEmpty[c] === h) {
        let next = -1;
        for (const x of this.classMembers[c]!) if (this.load[x] === 0 && (next < 0 || x < next)) next = x;
        this.classFirstEmpty[c] = next;
      }
    }
    for (let r = 0; r < RESOURCES; r++) {
      const d = this.demand[r]![p]!;
      this.residual[r]![h]! -= d;
      if (this.free[p]) this.remaining[r]! -= d;
      if (this.absorbing[h]) this.absorbPlaced[r]! += d;
    }
    const g = m.group[p]!;
    if (this.groupCount[g]!++ === 0) this.groupPart[g] = m.graph.part[h]!;
    this.links(p, h, 1);
    // Out of the unassigned list: swap with the last one.
    const at = this.where[p]!;
    const last = this.unassigned[--this.unassignedCount]!;
    this.unassigned[at] = last;
    this.where[last] = at;
    this.unassigned[this.unassignedCount] = p;
    this.where[p] = this.unassignedCount;
  }

  unassign(p: number) {
    const m = this.model;
    const h = this.hostOf[p]!;
    this.hostOf[p] = -1;
    this.links(p, h, -1);
    const g = m.group[p]!;
    if (--this.groupCount[g]! === 0) this.groupPart[g] = -1;
    for (let r = 0; r < RESOURCES; r++) {
      const d = this.demand[r]![p]!;
      this.residual[r]![h]! += d;
      if (this.free[p]) this.remaining[r]! += d;
      if (this.absorbing[h]) this.absorbPlaced[r]! -= d;
    }
    if (--this.load[h]! === 0) {
      this.active--;
      this.capacityOf(h, -1);
      const c = m.hostClass[h]!;
      const first = this.classFirstEmpty[c]!;
      if (first < 0 || h < first) this.classFirstEmpty[c] = h;
    }
    const at = this.where[p]!;
    const other = this.unassigned[this.unassignedCount]!;
    this.unassigned[at] = other;
    this.where[other] = at;
    this.unassigned[this.unassignedCount] = p;
    this.where[p] = this.unassignedCount++;
  }

  /** Latency p would add on h (its links to placed nodes). */
  added(p: number, h: number): number {
    return this.cost[p]![this.slot(p, h)]!;
  }

  /**
   * Bounds of the current search node, or undefined when some unplaced position has no candidate left. With
   * `mayOpen` false no empty host may be opened (the host count is at its limit). Without `latency` the latency
   * bound is not needed, so a position's scan stops once it is known not to be the pick and to have an active host.
   */
  scan(mayOpen: boolean, latency = true): ScanResult | undefined {
    const m = this.model;
    let pick = -1;
    let fewest = Infinity;
    let least = this.pairLatency;
    let needing = 0;
    for (let i = 0; i < this.unassignedCount; i++) {
      const p = this.unassigned[i]!;
      const d = m.domains[p]!;
      const cp = this.cost[p]!;
      const weight = 1 + this.chainRefs[p]!.length;
      let count = 0;
      let onActive = 0;
      let cheapest = Infinity;
      let k = 0;
      for (; k < d.length; k++) {
        const h = d[k]!;
        const open = this.load[h]! > 0;
        if (!open && !mayOpen) continue;
        if (!this.fits(p, h)) continue;
        count++;
        if (open) onActive++;
        if (cp[k]! < cheapest) cheapest = cp[k]!;
        if (!latency && onActive > 0 && count > fewest) break;
      }
      this.work += k * weight;
      if (count === 0) return undefined;
      least += cheapest;
      this.count[p] = count;
      if (onActive === 0) this.needNew[needing++] = p;
      const size = this.size;
      if (count < fewest || (count === fewest && (size[p]! > size[pick]! || (size[p] === size[pick] && p < pick))))
        [fewest, pick] = [count, p];
    }
    const newHosts = Math.max(needing === 0 ? 0 : this.newHostBound(needing), this.capacityBound());
    return { pick, newHosts, latency: least };
  }

  /**
   * Hosts still to open for the nodes no active host can take: nodes with pairwise disjoint candidate sets each need
   * their own (taken greedily, fewest candidates first), and nodes bound to one part each need one there.
   */
  private newHostBound(needing: number): number {
    const m = this.model;
    const list = Array.from(this.needNew.subarray(0, needing)).sort((a, b) => this.count[a]! - this.count[b]! || a - b);
    const stamp = ++this.stamp;
    let disjoint = 0;
    let parts = 0;
    for (const p of list) {
      const d = m.domains[p]!;
      let free = true;
      let part = -2;
      for (const h of d) {
        if (this.load[h]! > 0 || !this.fits(p, h)) continue;
        if (this.mark[h] === stamp) free = false;
        const hp = m.graph.part[h]!;
        part = part === -2 || part === hp ? hp : -1;
      }
      this.work += d.length;
      if (free) {
        disjoint++;
        for (const h of d) if (this.load[h] === 0 && this.fits(p, h)) this.mark[h] = stamp;
      }
      if (part >= 0 && this.partMark[part] !== stamp) {
        this.partMark[part] = stamp;
        parts++;
      }
    }
    return Math.max(1, disjoint, parts);
  }

  /**
   * Hosts still to open for the unpinned demand the active absorbing hosts cannot take, each adding at most the
   * largest capacity.
   */
  private capacityBound(): number {
    let bound = 0;
    for (let r = 0; r < RESOURCES; r++) {
      if (this.absorbUnbounded[r]! > 0) continue;
      const spare = this.absorbCapacity[r]! - this.absorbPlaced[r]!;
      const short = this.remaining[r]! - spare;
      if (short > 0 && this.largest[r]! < Infinity) bound = Math.max(bound, Math.ceil(short / this.largest[r]!));
    }
    return bound;
  }
}
