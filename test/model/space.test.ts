/** Packet-space arithmetic and rule synthesis. */
import t from 'tap';
import { Partition, boxOf, contains, intersect, subtract } from '../../src/model/space.js';
import { synthesiseRules } from '../../src/engine/rules.js';

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
