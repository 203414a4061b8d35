/** Packet-space arithmetic and rule synthesis. */
import t from 'tap';
import {
  Partition,
  UNIVERSE,
  boxOf,
  coalesce,
  coalesceWith,
  contains,
  intersect,
  regionSubtract,
  ruleBox,
  subtract,
  volume,
  type Box,
} from '../../src/model/space.js';
import { synthesiseRules, widenedRule } from '../../src/engine/rules/rules.js';

t.test('boxes intersect and subtract exactly', async (t) => {
  const a = boxOf({ src: '10.0.0.-1', dst: '*', dstPort: '0-100' });
  const b = boxOf({ src: '10.0.0.5', dst: '20.0.-1.-1', dstPort: '50-150', proto: 'TCP' });
  const x = intersect(a, b)!;
  t.same(x, boxOf({ src: '10.0.0.5', dst: '20.0.-1.-1', dstPort: '50-100', proto: 'TCP' }));
  t.ok(contains(a, x) && contains(b, x));
  const rest = subtract(a, b);
  t.ok(
    rest.every((r) => !intersect(r, b)),
    'the difference misses b',
  );
  t.ok(
    rest.every((r) => contains(a, r)),
    'and stays in a',
  );
  t.notOk(
    intersect(boxOf({ src: '10.-1.0.1', dst: '*' }), boxOf({ src: '10.0.-1.2', dst: '*' })),
    'crossing wildcards that cannot meet',
  );
  t.ok(
    intersect(boxOf({ src: '10.-1.0.1', dst: '*' }), boxOf({ src: '10.0.-1.1', dst: '*' })),
    'crossing wildcards that meet',
  );
});

t.test('the partition makes every predicate a union of classes', async (t) => {
  const p = new Partition();
  const all = p.add(boxOf({ src: '10.0.0.1', dst: '20.0.0.1' }), true);
  const web = p.add(boxOf({ src: '10.0.0.1', dst: '20.0.0.1', dstPort: '80', proto: 'TCP' }), true);
  const rule = p.add(boxOf({ src: '*', dst: '20.0.0.-1', dstPort: '0-1023' }), false);
  const classes = p.classes();
  t.equal(classes.length, 3, 'port 80 TCP; the rest of 0-1023; everything else');
  t.ok(classes.every((c) => c.members.has(all)));
  t.equal(classes.filter((c) => c.members.has(web)).length, 1);
  t.equal(classes.filter((c) => c.members.has(rule)).length, 2);
});

t.test('synthesised rules are explicit, widened and deployable', async (t) => {
  const p = new Partition();
  p.add(boxOf({ src: '10.0.0.1', dst: '20.0.0.1', dstPort: '80', proto: 'TCP' }), true);
  p.add(boxOf({ src: '10.0.0.2', dst: '20.0.0.1', dstPort: '80', proto: 'TCP' }), true);
  p.add(boxOf({ src: '10.0.1.1', dst: '20.0.0.1', dstPort: '80', proto: 'TCP' }), true);
  const [a, b, c] = p.classes();
  const rules = synthesiseRules(
    [
      { cls: a!, drop: false },
      { cls: b!, drop: false },
      { cls: c!, drop: true },
    ],
    true,
  );
  t.same(rules, [
    { action: 'ALLOW', source: '10.0.0.-1', destination: '-1.-1.-1.-1', protocol: 'ANY', srcPort: '*', dstPort: '*' },
  ]);
  const black = synthesiseRules(
    [
      { cls: a!, drop: false },
      { cls: b!, drop: false },
      { cls: c!, drop: true },
    ],
    false,
  );
  t.same(black, [
    { action: 'DENY', source: '10.0.1.-1', destination: '-1.-1.-1.-1', protocol: 'ANY', srcPort: '*', dstPort: '*' },
  ]);
});

t.test('a class that is a network minus one host becomes CIDR-shaped rules', async (t) => {
  const p = new Partition();
  p.add(boxOf({ src: '10.0.0.-1', dst: '20.0.0.1' }), true);
  p.add(boxOf({ src: '10.0.0.7', dst: '20.0.0.1' }), true);
  const [rest, host] = p
    .classes()
    .sort((x, y) => x.boxes.length - y.boxes.length)
    .reverse();
  const rules = synthesiseRules(
    [
      { cls: rest!, drop: false },
      { cls: host!, drop: true },
    ],
    true,
  );
  t.ok(rules.length > 0);
  t.ok(
    rules.every((r) => !/-1\.\d/.test(r.source)),
    'wildcards only trailing',
  );
  t.notOk(
    rules.some((r) => r.source === '10.0.0.7' || r.source === '10.0.0.-1'),
    'the dropped host is never allowed',
  );
});

t.test('volumes are exact; coalescing keeps the union and joins what touches', async (t) => {
  t.equal(volume(UNIVERSE), 256n ** 8n * 65536n ** 2n * 3n, 'every packet, beyond 2^53');
  t.equal(volume(boxOf({ src: '10.0.0.1', dst: '20.0.0.-1', dstPort: '80-89', proto: 'TCP' })), 256n * 10n * 65536n);
  const ports = (lo: number, hi: number) => boxOf({ src: '10.0.0.1', dst: '*', dstPort: `${lo}-${hi}` });
  t.same(coalesce([ports(90, 99), ports(0, 9), ports(10, 89)]), [ports(0, 99)], 'touching ranges, in any order');
  t.same(coalesce([ports(0, 9), ports(11, 20)]), [ports(0, 9), ports(11, 20)], 'a gap stays');
  // The universe minus a few crossing boxes, in many pieces: fewer boxes, the same packets, still disjoint.
  const holes = [
    boxOf({ src: '10.-1.0.1', dst: '*', proto: 'TCP' }),
    boxOf({ src: '*', dst: '20.0.0.-1', dstPort: '22-80' }),
    boxOf({ src: '10.0.-1.-1', dst: '-1.-1.-1.7', srcPort: '1000-2000', proto: 'UDP' }),
  ];
  let pieces: Box[] = [UNIVERSE];
  for (const h of holes) pieces = regionSubtract(pieces, h);
  const joined = coalesce(pieces);
  t.ok(joined.length < pieces.length, `${pieces.length} pieces in ${joined.length} boxes`);
  const total = (boxes: Box[]) => boxes.reduce((n, b) => n + volume(b), 0n);
  t.equal(total(joined), total(pieces), 'the same number of packets');
  t.ok(
    joined.every((a, i) => joined.every((b, j) => i === j || !intersect(a, b))),
    'disjoint',
  );
  t.ok(
    pieces.every((p) => joined.some((b) => contains(b, p))) &&
      joined.every((b) => holes.every((h) => !intersect(b, h))),
    'every piece inside one box, no box in a hole',
  );
  const tagged = coalesceWith(
    [
      { box: ports(0, 9), tag: ['a'] },
      { box: ports(10, 19), tag: ['b'] },
      { box: ports(30, 39), tag: ['c'] },
    ],
    (x, y) => [...x, ...y],
  );
  t.same(tagged, [
    { box: ports(0, 19), tag: ['a', 'b'] },
    { box: ports(30, 39), tag: ['c'] },
  ]);
});

t.test('ports constrain TCP and UDP only; OTHER packets are never told apart by ports', async (t) => {
  const PROTO = 20; // the protocol's bounds in a box
  const web = boxOf({ src: '*', dst: '20.0.0.1', dstPort: '80' });
  t.same(web.slice(PROTO), [0, 1], 'ANY with ports: TCP and UDP');
  t.same(boxOf({ src: '*', dst: '*', dstPort: '0-65535' }).slice(PROTO), [0, 2], 'a full range is no condition');
  t.same(boxOf({ src: '*', dst: '*', proto: 'OTHER' }).slice(16), [0, 65535, 0, 65535, 2, 2]);
  t.throws(() => boxOf({ src: '*', dst: '*', proto: 'OTHER', dstPort: '80' }), /OTHER traffic has no ports/);
  // Pieces of a subtraction and of a partition keep every port value wherever they hold OTHER packets.
  const all = boxOf({ src: '10.0.0.-1', dst: '*' });
  const pieces = [
    ...subtract(all, web),
    ...regionSubtract([all], boxOf({ src: '*', dst: '*', srcPort: '1000-2000', proto: 'UDP' })),
  ];
  const p = new Partition();
  p.add(all, true);
  p.add(web, false);
  p.add(boxOf({ src: '10.0.0.0/25', dst: '*', srcPort: '53' }), false);
  const boxes = [...pieces, ...p.classes().flatMap((c) => c.boxes)];
  t.ok(boxes.length > 5);
  t.same(
    boxes.filter((b) => b[PROTO + 1] === 2 && (b[16] !== 0 || b[17] !== 65535 || b[18] !== 0 || b[19] !== 65535)),
    [],
    'no box holds OTHER packets for some ports only',
  );
});

t.test('a CIDR rule address is one box; synthesis keeps writing octet patterns', async (t) => {
  t.same(
    boxOf({ src: '172.16.0.0/12', dst: '10.1.2.128/25' }).slice(0, 16),
    [172, 172, 16, 31, 0, 255, 0, 255, 10, 10, 1, 1, 2, 2, 128, 255],
  );
  const p = new Partition();
  const traffic = p.add(boxOf({ src: '172.-1.-1.-1', dst: '20.0.0.1', dstPort: '80', proto: 'TCP' }), true);
  p.add(boxOf({ src: '172.16.0.0/12', dst: '*' }), false);
  const classes = p.classes().filter((c) => c.members.has(traffic));
  const rules = synthesiseRules(
    classes.map((cls) => ({ cls, drop: cls.members.size === 1 })),
    true,
  );
  t.ok(rules.length > 0);
  for (const r of rules) {
    t.notMatch(`${r.source} ${r.destination}`, /\//, `${r.source} -> ${r.destination}: octet patterns`);
  }
});

t.test('TCP with UDP is written as ANY with ports, never as one protocol nor as ANY without ports', async (t) => {
  const other = boxOf({ src: '*', dst: '*', proto: 'OTHER' });
  const web = boxOf({ src: '*', dst: '*', dstPort: '0-80' });
  // A chosen rule taking TCP and UDP above port 80 (ANY with ports), widened without touching OTHER or port 80.
  const widened = widenedRule(
    { source: '100.0.1.1', destination: '100.0.4.1', protocol: 'ANY', srcPort: '*', dstPort: '81-65535' },
    'ALLOW',
    [other, web],
  );
  t.equal(widened.protocol, 'ANY');
  t.equal(widened.dstPort, '81-65535');
  const box = ruleBox(widened);
  t.ok(contains(box, boxOf({ src: '100.0.1.1', dst: '100.0.4.1', dstPort: '1000-1500', proto: 'UDP' })), 'UDP kept');
  t.notOk(intersect(box, other) || intersect(box, web), 'OTHER and port 80 untouched');
  // TCP and UDP classes on every port, OTHER to avoid: no single rule can name both.
  const p = new Partition();
  p.add(boxOf({ src: '10.0.0.1', dst: '20.0.0.1', proto: 'TCP' }), true);
  p.add(boxOf({ src: '10.0.0.1', dst: '20.0.0.1', proto: 'UDP' }), true);
  p.add(boxOf({ src: '10.0.0.1', dst: '20.0.0.1', proto: 'OTHER' }), true);
  const classes = p.classes();
  const entering = classes.map((cls) => ({ cls, drop: cls.boxes.every((b) => intersect(b, other)) }));
  const rules = synthesiseRules(entering, true);
  const boxes = rules.map(ruleBox);
  t.ok(
    boxes.every((b) => !intersect(b, other)),
    `no rule allows OTHER: ${JSON.stringify(rules)}`,
  );
  for (const proto of ['TCP', 'UDP'] as const)
    t.ok(
      boxes.some((b) => contains(b, boxOf({ src: '10.0.0.1', dst: '20.0.0.1', proto }))),
      `${proto} allowed`,
    );
});
