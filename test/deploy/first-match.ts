/**
 * First match over a rule list's boxes, written here from the meaning of a rule list (docs/SEMANTICS.md): a packet's
 * line is the first whose boxes hold it and whose except boxes do not. A packet is a point of the packet space
 * (4 source octets, 4 destination octets, source port, destination port, protocol), as the boxes' dimensions.
 *
 * The tests ask it about thousands of packets on lists of thousands of lines, so each list is indexed: per octet of
 * the addresses (dimensions 0 to 7) and per value, a bit per line whose boxes reach that value. A packet's
 * candidates are the lines whose bits are set for all 8 of its octets (a line missing one holds no box with the
 * packet); only they are checked box by box, in list order.
 */
import type { RuleList } from '../../src/deploy/analysis/index.js';

/** Whether box `b` holds point `p`. */
export function inside(b: readonly number[], p: readonly number[]): boolean {
  for (let d = 0; d < p.length; d++) if (p[d]! < b[2 * d]! || p[d]! > b[2 * d + 1]!) return false;
  return true;
}

const OCTETS = 8;

/** Per list, row `256 d + v`: a bit for each line (by index) some of whose boxes reach value v of octet d. */
const indexes = new WeakMap<RuleList, Int32Array[]>();
function indexOf(list: RuleList): Int32Array[] {
  let rows = indexes.get(list);
  if (rows) return rows;
  const words = (list.lines.length + 31) >>> 5;
  rows = Array.from({ length: OCTETS * 256 }, () => new Int32Array(words));
  const reach = new Uint8Array(256);
  for (let k = 0; k < list.lines.length; k++) {
    const boxes = list.lines[k]!.boxes;
    for (let d = 0; d < OCTETS; d++) {
      reach.fill(0);
      for (const b of boxes) reach.fill(1, b[2 * d]!, b[2 * d + 1]! + 1);
      for (let v = 0; v < 256; v++) if (reach[v]) rows[256 * d + v]![k >>> 5]! |= 1 << (k & 31);
    }
  }
  indexes.set(list, rows);
  return rows;
}

/** The line that decides a packet (its index), from line `from` on, or -1 for the default. */
export function decider(list: RuleList, p: readonly number[], from = 0): number {
  const rows = indexOf(list);
  const at = Array.from({ length: OCTETS }, (_, d) => rows[256 * d + p[d]!]!);
  for (let w = from >>> 5; w < at[0]!.length; w++) {
    let bits = w === from >>> 5 ? -1 << (from & 31) : -1;
    for (let d = 0; d < OCTETS && bits; d++) bits &= at[d]![w]!;
    for (; bits; bits &= bits - 1) {
      const k = 32 * w + 31 - Math.clz32(bits & -bits);
      const l = list.lines[k]!;
      if (l.boxes.some((b) => inside(b, p)) && !(l.except ?? []).some((b) => inside(b, p))) return k;
    }
  }
  return -1;
}

/** Whether the list lets a packet through: its deciding line's verdict, or the default's. */
export function allowsPacket(list: RuleList, p: readonly number[]): boolean {
  const k = decider(list, p);
  return k < 0 ? list.defaultAllow : list.lines[k]!.allow;
}
