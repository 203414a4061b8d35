/**
 * `exactRules` (least privilege): the rules it writes for a set of boxes let through exactly those packets, read
 * by the evaluators' own packet semantics (`packets.ts`, no code of src/engine), on 300 random sets of boxes with
 * octet ranges, prefixes, port ranges and protocols; an aligned octet range with any octets after it is one prefix.
 */
import t from 'tap';
import { random } from '../../../src/bench/topology.js';
import { exactRules } from '../../../src/engine/rules/rules.js';
import type { Node } from '../../../src/model/types.js';
import { behave, everything, minus, type Box } from '../packets.js';

const SETS = 300;

/** Whether the address of octet k already has an octet range (neither one value nor all). */
const rangedIn = (box: number[], k: number): boolean => {
  for (let j = k - (k % 4); j < k; j++)
    if (box[2 * j] !== box[2 * j + 1] && !(box[2 * j] === 0 && box[2 * j + 1] === 255)) return true;
  return false;
};

/** A box the way the partition makes them: OTHER packets always with every port. */
function randomBox(rnd: () => number): Box {
  const range = (lo: number, hi: number): [number, number] => {
    const a = lo + Math.floor(rnd() * (hi - lo + 1));
    const b = Math.min(hi, a + Math.floor(rnd() * (hi > 255 ? 2000 : 12)));
    return [a, b];
  };
  const box: number[] = [];
  for (let k = 0; k < 8; k++) {
    // At most one octet range per address (what prefixes and NAT pools make); its place is random.
    const roll = k % 4 === 0 ? rnd() : rnd() * 0.8;
    const partial = roll >= 0.8 || (k % 4 !== 0 && box.length >= 2 && rnd() < 0.1 && !rangedIn(box, k));
    box.push(...(partial ? range(0, 255) : roll < 0.45 ? ([10 + k, 10 + k] as const) : ([0, 255] as const)));
  }
  const protocol = [
    [0, 0],
    [1, 1],
    [2, 2],
    [0, 1],
    [1, 2],
    [0, 2],
  ][Math.floor(rnd() * 6)]!;
  const ported = protocol[1]! < 2 && rnd() < 0.6;
  box.push(...(ported ? range(0, 65535) : [0, 65535]), ...(ported ? range(0, 2000) : [0, 65535]), ...protocol);
  return box;
}

const passed = (boxes: Box[]): Box[] => {
  const node: Node = {
    name: 'fw',
    functionalType: 'FIREWALL',
    configuration: { name: 'fw', firewall: { defaultAction: 'DENY', elements: exactRules(boxes, 'ALLOW') } },
  };
  return behave(node, [everything()], true);
};

t.test(`exact rules let through exactly their boxes (${SETS} random sets)`, async (t) => {
  const rnd = random(48);
  for (let k = 0; k < SETS; k++) {
    const boxes = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => randomBox(rnd));
    const through = passed(boxes);
    const extra = boxes.reduce((rest, b) => minus(rest, b), through);
    const missing = through.reduce((rest, b) => minus(rest, b), boxes);
    if (extra.length || missing.length)
      t.fail(`set ${k}: ${extra.length} boxes too many, ${missing.length} missing (${JSON.stringify(boxes)})`);
  }
  t.pass(`${SETS} sets`);
});

t.test('an aligned range with any octets after it is one prefix; another range is its values', async (t) => {
  const box = [172, 172, 16, 31, 0, 255, 0, 255, 10, 10, 0, 0, 0, 0, 1, 1, 0, 65535, 0, 65535, 0, 0];
  t.same(
    exactRules([box], 'ALLOW').map((r) => `${r.source} ${r.destination} ${r.protocol}`),
    ['172.16.0.0/12 10.0.0.1 TCP'],
  );
  const inside = [10, 10, 0, 0, 5, 6, 1, 1, 20, 20, 0, 0, 0, 0, 1, 1, 0, 65535, 80, 80, 0, 1];
  t.same(
    exactRules([inside], 'ALLOW').map((r) => `${r.source} ${r.destination} ${r.protocol} ${r.dstPort}`),
    ['10.0.5.1 20.0.0.1 ANY 80', '10.0.6.1 20.0.0.1 ANY 80'],
  );
});
