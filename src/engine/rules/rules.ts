/**
 * Rule synthesis for a firewall whose rules we choose: the classes that need an exception to the default action
 * become rules, each widened as far as it can go without touching a class that needs the default, then rules
 * contained in others are dropped and neighbours merged. Every rule is deployable: an explicit action, addresses
 * with trailing -1 octets only (so each is one CIDR), ports `*`, `N` or `A-B`, one protocol or ANY.
 */
import type { Elements } from '../../model/types.js';
import {
  DIMS,
  DPORT,
  DST,
  PROTO,
  PROTOCOLS,
  SPORT,
  SRC,
  TCP_AND_UDP,
  UNIVERSE,
  coalesce,
  meet,
  type Box,
  type PacketClass,
  ruleBox,
} from '../../model/space.js';

const full = (b: Box, d: number) => b[2 * d] === UNIVERSE[2 * d] && b[2 * d + 1] === UNIVERSE[2 * d + 1];
const single = (b: Box, d: number) => b[2 * d] === b[2 * d + 1];
const widen = (b: Box, dims: number[]): Box => {
  const out = [...b];
  for (const d of dims) {
    out[2 * d] = UNIVERSE[2 * d]!;
    out[2 * d + 1] = UNIVERSE[2 * d + 1]!;
  }
  return out;
};
const setDim = (b: Box, d: number, v: number): Box => {
  const out = [...b];
  out[2 * d] = v;
  out[2 * d + 1] = v;
  return out;
};

/** Can every packet of `box` take the exception without touching a class that needs the default? */
const clear = (box: Box, avoid: Box[]) => !avoid.some((a) => meet(a, box));

/** Splits a box into representable rules, widening each dimension when that hits no avoided class. */
function representable(box: Box, avoid: Box[]): Box[] {
  for (const at of [SRC, DST]) {
    for (let k = 0; k < 4; k++) {
      const d = at + k;
      const tail = [0, 1, 2, 3].slice(k).map((j) => at + j);
      if (tail.every((j) => full(box, j))) break;
      if (single(box, d)) continue;
      // A partial octet: make it and everything after it a wildcard, or list its values.
      const wide = widen(box, tail);
      if (clear(wide, avoid)) return representable(wide, avoid);
      const parts: Box[] = [];
      for (let v = box[2 * d]!; v <= box[2 * d + 1]!; v++) parts.push(...representable(setDim(box, d, v), avoid));
      return parts;
    }
  }
  if (!single(box, PROTO) && !full(box, PROTO)) {
    const wide = widen(box, [PROTO]);
    if (clear(wide, avoid)) return representable(wide, avoid);
    const parts: Box[] = [];
    for (let v = box[2 * PROTO]!; v <= box[2 * PROTO + 1]!; v++)
      parts.push(...representable(setDim(box, PROTO, v), avoid));
    return parts;
  }
  return [grow(box, avoid)];
}

/** TCP and UDP together: one rule only as ANY with ports (docs/SEMANTICS.md). */
const portedAny = (b: Box) => b[2 * PROTO] === TCP_AND_UDP[0] && b[2 * PROTO + 1] === TCP_AND_UDP[1];

/** Protocols one rule can name: one, all, or TCP and UDP with a port range. */
const oneRuleProtocols = (b: Box) =>
  single(b, PROTO) || full(b, PROTO) || (portedAny(b) && !(full(b, SPORT) && full(b, DPORT)));

/** Widens a representable rule: protocol, ports, then address octets from the last one back. */
function grow(box: Box, avoid: Box[]): Box {
  let b = box;
  // Each step widens some dimensions and keeps the others: only avoided boxes meeting b in the dimensions a phase
  // keeps can meet what it widens, and testing those alone (once per phase, not once per step) gives the same rule.
  let near = avoid.filter((a) => meetsIn(a, b, SRC, SRC + 4));
  for (const d of [PROTO, SPORT, DPORT]) {
    const wide = widen(b, [d]);
    if (!full(b, d) && clear(wide, near) && oneRuleProtocols(wide)) b = wide;
  }
  for (const at of [DST, SRC]) {
    if (at === SRC) near = avoid.filter((a) => meetsIn(a, b, DST, DIMS));
    for (let k = 3; k >= 0; k--) {
      const tail = [0, 1, 2, 3].slice(k).map((j) => at + j);
      const wide = widen(b, tail);
      if (clear(wide, near)) b = wide;
      else break;
    }
  }
  return b;
}

/** Whether boxes a and b meet in dimensions from .. to - 1. */
function meetsIn(a: Box, b: Box, from: number, to: number): boolean {
  for (let i = 2 * from; i < 2 * to; i += 2) if (a[i]! > b[i + 1]! || b[i]! > a[i + 1]!) return false;
  return true;
}

/** Merges two rules that differ in one port range (adjacent or overlapping) or cover all protocols together. */
function merge(a: Box, b: Box): Box | undefined {
  let diff = -1;
  for (let d = 0; d < DIMS; d++) {
    if (a[2 * d] === b[2 * d] && a[2 * d + 1] === b[2 * d + 1]) continue;
    if (diff >= 0) return undefined;
    diff = d;
  }
  if (diff < 0) return a;
  const lo = Math.min(a[2 * diff]!, b[2 * diff]!);
  const hi = Math.max(a[2 * diff + 1]!, b[2 * diff + 1]!);
  const touching = Math.max(a[2 * diff]!, b[2 * diff]!) <= Math.min(a[2 * diff + 1]!, b[2 * diff + 1]!) + 1;
  if (!touching) return undefined;
  const merged = [...a];
  merged[2 * diff] = lo;
  merged[2 * diff + 1] = hi;
  // Address octets must stay single or whole; TCP with UDP needs a port range.
  if (diff < SPORT && !full(merged, diff)) return undefined;
  if (!oneRuleProtocols(merged)) return undefined;
  return merged;
}

/** A dimension's bounds mixed into 32 bits, for `mergesSome`'s buckets. */
function mixed(d: number, lo: number, hi: number): number {
  let h = Math.imul(d + 1, 0x9e3779b1) ^ lo;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) ^ hi;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * Whether some two rules of the list merge. Only two alike in every dimension but one (or in all) can: a rule's
 * bounds hashed without one dimension put such pairs in one bucket, and only pairs sharing a bucket are tried. An
 * address octet merges only into a whole one, so there only rules with an end at 0 or 255 are put in buckets. The
 * lists of classes listed octet value by value (hundreds of rules) seldom merge at all (none of the 652 lists of
 * test/engine/solving/allocate.test.ts), and trying every pair found nothing at a cost quadratic in their length.
 */
function mergesSome(list: Box[]): boolean {
  const buckets = Array.from({ length: DIMS + 1 }, () => new Map<number, number[]>());
  for (let k = 0; k < list.length; k++) {
    const b = list[k]!;
    let whole = 0;
    for (let d = 0; d < DIMS; d++) whole = (whole + mixed(d, b[2 * d]!, b[2 * d + 1]!)) | 0;
    const put = (map: Map<number, number[]>, key: number) => {
      const bucket = map.get(key);
      if (!bucket) map.set(key, [k]);
      else {
        for (const j of bucket) if (merge(list[j]!, b)) return true;
        bucket.push(k);
      }
      return false;
    };
    if (put(buckets[DIMS]!, whole)) return true;
    for (let d = 0; d < DIMS; d++) {
      if (d < SPORT && b[2 * d] !== 0 && b[2 * d + 1] !== 255) continue;
      if (put(buckets[d]!, (whole - mixed(d, b[2 * d]!, b[2 * d + 1]!)) | 0)) return true;
    }
  }
  return false;
}

/**
 * The rules no other rule contains, in order, the first of equal ones kept. A rule's containers are those holding its
 * bounds in every dimension: per dimension, the rules of its own bounds and of the wider bounds holding them (few:
 * most rules are one value of an octet), as bit sets whose meet over the dimensions is left. Testing every pair was
 * most of `simplify`'s time on hundreds of rules.
 */
function uncontained(rules: Box[]): Box[] {
  const firsts = new Map<string, Box>();
  for (const r of rules) {
    const key = r.join();
    if (!firsts.has(key)) firsts.set(key, r);
  }
  const list = [...firsts.values()];
  const words = (list.length + 31) >> 5;
  const holders = list.map(() => new Uint32Array(words).fill(~0));
  for (let d = 0; d < DIMS; d++) {
    const byBounds = new Map<number, { lo: number; hi: number; rules: number[]; set: Uint32Array }>();
    list.forEach((r, k) => {
      const [lo, hi] = [r[2 * d]!, r[2 * d + 1]!];
      let same = byBounds.get(lo * 65536 + hi);
      if (!same) byBounds.set(lo * 65536 + hi, (same = { lo, hi, rules: [], set: new Uint32Array(words) }));
      same.rules.push(k);
      same.set[k >> 5]! |= 1 << (k & 31);
    });
    const wide = [...byBounds.values()].filter((b) => b.lo < b.hi);
    for (const b of byBounds.values()) {
      const holding = Uint32Array.from(b.set);
      for (const w of wide)
        if (w !== b && w.lo <= b.lo && w.hi >= b.hi) for (let i = 0; i < words; i++) holding[i]! |= w.set[i]!;
      for (const k of b.rules) for (let i = 0; i < words; i++) holders[k]![i]! &= holding[i]!;
    }
  }
  return list.filter((_, k) => {
    holders[k]![k >> 5]! &= ~(1 << (k & 31));
    return holders[k]!.every((w) => w === 0);
  });
}

function simplify(rules: Box[]): Box[] {
  let list = uncontained(rules);
  let changed = mergesSome(list);
  while (changed) {
    changed = false;
    outer: for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const m = merge(list[i]!, list[j]!);
        if (m) {
          list = [...list.slice(0, i), m, ...list.slice(i + 1, j), ...list.slice(j + 1)];
          changed = true;
          break outer;
        }
      }
    }
  }
  return list;
}

function address(b: Box, at: number): string {
  return [0, 1, 2, 3].map((k) => (full(b, at + k) ? '-1' : String(b[2 * (at + k)]))).join('.');
}

function ports(b: Box, d: number): string {
  if (full(b, d)) return '*';
  return single(b, d) ? String(b[2 * d]) : `${b[2 * d]}-${b[2 * d + 1]}`;
}

export function ruleOf(b: Box, action: 'ALLOW' | 'DENY'): Elements {
  return {
    action,
    source: address(b, SRC),
    destination: address(b, DST),
    protocol: full(b, PROTO) || portedAny(b) ? 'ANY' : PROTOCOLS[b[2 * PROTO]!],
    srcPort: ports(b, SPORT),
    dstPort: ports(b, DPORT),
  };
}

const octetRule = (b: Box) => [SRC, DST].every((at) => [0, 1, 2, 3].every((k) => single(b, at + k) || full(b, at + k)));

/**
 * A chosen rule widened as far as it goes without touching an `avoid` box (as synthesised rules are), so that the
 * count stays and the rule reads as before; a rule whose address is a prefix inside an octet stays as it is.
 */
export function widenedRule(rule: Omit<Elements, 'action'>, action: 'ALLOW' | 'DENY', avoid: Box[]): Elements {
  const box = ruleBox({ ...rule, directional: true });
  return octetRule(box) ? ruleOf(grow(box, avoid), action) : { action, ...rule };
}

/**
 * The rules of a firewall: `entering` are the classes that reach it, with whether it must drop them; `whitelist`
 * means default DENY with ALLOW rules, otherwise default ALLOW with DENY rules.
 */
export function synthesiseRules(entering: { cls: PacketClass; drop: boolean }[], whitelist: boolean): Elements[] {
  const exception = (e: { drop: boolean }) => (whitelist ? !e.drop : e.drop);
  return coveringRules(
    entering.filter(exception).map((e) => e.cls),
    entering.filter((e) => !exception(e)).map((e) => e.cls),
    whitelist ? 'ALLOW' : 'DENY',
  );
}

/** Deployable rules with one action covering the `wanted` classes, widened without touching an `avoid` class. */
export function coveringRules(wanted: PacketClass[], avoid: PacketClass[], action: 'ALLOW' | 'DENY'): Elements[] {
  const keepClear = avoid.flatMap((c) => c.boxes);
  const rules = simplify(wanted.flatMap((c) => c.boxes).flatMap((b) => representable(b, keepClear)));
  return rules.map((b) => ruleOf(b, action));
}

/** An octet range as aligned blocks of a power of two (each a CIDR prefix inside the octet): [start, size]. */
function alignedBlocks(lo: number, hi: number): [number, number][] {
  const out: [number, number][] = [];
  for (let at = lo; at <= hi;) {
    let size = 1;
    while (at % (2 * size) === 0 && at + 2 * size - 1 <= hi) size *= 2;
    out.push([at, size]);
    at += size;
  }
  return out;
}

/** Address texts whose union is exactly the octet bounds of a box at `at` (SRC or DST). */
function exactAddresses(b: Box, at: number): string[] {
  const octets = [0, 1, 2, 3].map((k) => [b[2 * (at + k)]!, b[2 * (at + k) + 1]!] as [number, number]);
  const expressible = (o: [number, number]) => o[0] === o[1] || (o[0] === 0 && o[1] === 255);
  const k = octets.findIndex((o) => !expressible(o));
  if (k < 0) return [octets.map(([lo, hi]) => (lo === hi ? String(lo) : '-1')).join('.')];
  const [lo, hi] = octets[k]!;
  const single = (o: [number, number]) => o[0] === o[1];
  const full = (o: [number, number]) => o[0] === 0 && o[1] === 255;
  if (octets.slice(0, k).every(single) && octets.slice(k + 1).every(full)) {
    return alignedBlocks(lo, hi).map(([start, size]) => {
      const fixed = octets.slice(0, k).map(([v]) => v);
      const text = [...fixed, start, ...octets.slice(k + 1).map(() => 0)].join('.');
      return `${text}/${8 * k + 8 - Math.log2(size)}`;
    });
  }
  // A range inside the address, with a partial octet after it or a range before it: each value of the octet apart.
  const out: string[] = [];
  for (let v = lo; v <= hi; v++) out.push(...exactAddresses(setDim(b, at + k, v), at));
  return out;
}

/**
 * Rules whose packets are exactly the given boxes, none wider (least privilege, docs/SEMANTICS.md): an octet range
 * becomes CIDR prefixes where it can, otherwise its values; TCP and UDP without ports one rule each. Boxes hold
 * OTHER packets for every port (space.ts), so a protocol range with OTHER has no port condition.
 */
export function exactRules(boxes: readonly Box[], action: 'ALLOW' | 'DENY'): Elements[] {
  const out: Elements[] = [];
  for (const b of coalesce(boxes)) {
    const protocols = oneRuleProtocols(b)
      ? [b]
      : [0, 1, 2].flatMap((p) => (meet(b, setDim(UNIVERSE, PROTO, p)) ? [setDim(b, PROTO, p)] : []));
    for (const box of protocols) {
      const { protocol, srcPort, dstPort } = ruleOf(box, action);
      for (const source of exactAddresses(box, SRC))
        for (const destination of exactAddresses(box, DST))
          out.push({ action, source, destination, protocol, srcPort, dstPort });
    }
  }
  return out;
}
