/** Ingest rules: hashes, staleness, deactivation and reactivation, derived events, malformed payloads. */
import t from 'tap';
import { indexOf, type EdgeItem } from '../../src/inventory/entities.js';
import {
  applyCommand,
  deactivateNode,
  emptyInventory,
  replaceCatalog,
  replaceFacts,
  reportHash,
  storeReport,
} from '../../src/inventory/ingest.js';
import { canonicalJson, sha1 } from '../../src/inventory/values.js';
import { catalog, changed, report, user, web } from './data.js';

t.test("resource hashes and report hashes are PuppetDB's", async (t) => {
  t.equal(sha1(canonicalJson(['Class', 'Apache', {}])), 'df8acf2676b628ece648b9d42ee3f9adca157b58');
  t.equal(sha1(canonicalJson(['Notify', 'hello', {}])), '9f8a03c16a0941843787de9057d7ff9eefc8bed9');
  const hash = reportHash({
    certname: 'foo.local',
    configuration_version: 'a81jasj123',
    start_time: Date.parse('2011-01-01T12:00:00-03:00'),
    end_time: Date.parse('2011-01-01T12:10:00-03:00'),
    producer_timestamp: Date.parse('2011-01-01T12:11:00-03:00'),
    puppet_version: '3.0.1',
    report_format: 4,
    transaction_uuid: '68b08e2a-eeb1-4322-b241-bfdf151d294b',
  });
  t.equal(hash, '5bc5d561c7912570a7c7f525b815477cdaed70a2');
});

t.test("a catalog replaces the node's previous one, unless it is older", async (t) => {
  const data = emptyInventory();
  t.ok(replaceCatalog(data, catalog('n', '2025-01-02T00:00:00Z', [web, user])));
  t.notOk(replaceCatalog(data, catalog('n', '2025-01-01T00:00:00Z', [web])), 'stale catalog ignored');
  t.equal(data.catalogs.n!.resources.length, 2);
  t.ok(replaceCatalog(data, catalog('n', '2025-01-03T00:00:00Z', [{ ...web, tags: ['b', 'a', 'b'] }])));
  t.same(
    data.catalogs.n!.resources.map((r) => r.tags),
    [['a', 'b']],
    'tags are a set',
  );
});

t.test("replace catalog v9 as Puppet 7 sends it: each resource's kind is accepted and not stored", async (t) => {
  const data = emptyInventory();
  const kinds = [
    { ...web, kind: 'compilable_type' },
    { ...user, kind: 'unknown' },
  ];
  t.ok(
    applyCommand(
      data,
      { command: 'replace catalog', version: 9, payload: catalog('n', '2025-01-02T00:00:00Z', kinds) },
      0,
    ),
  );
  const stored = data.catalogs.n!.resources;
  t.same(
    stored.map((r) => [r.type, r.title]),
    [
      ['Service', 'nginx'],
      ['User', 'alice'],
    ],
  );
  t.notOk(
    stored.some((r) => 'kind' in r),
    'kind is dropped, as PuppetDB does',
  );
  const plain = emptyInventory();
  replaceCatalog(plain, catalog('n', '2025-01-02T00:00:00Z', [web, user]));
  t.same(stored, plain.catalogs.n!.resources, 'the same resources as without kind');
  t.throws(
    () => replaceCatalog(emptyInventory(), catalog('n', '2025-01-02T00:00:00Z', [{ ...web, kind: 7 }])),
    /payload\.resources\[0\]\.kind: expected a string/,
  );
});

t.test('deactivation hides resources; something newer reactivates', async (t) => {
  const data = emptyInventory();
  replaceCatalog(data, catalog('n', '2025-01-01T00:00:00Z', [web]));
  t.notOk(
    deactivateNode(data, { certname: 'n', producer_timestamp: '2024-12-31T00:00:00Z' }),
    'older than the catalog: stale',
  );
  t.ok(deactivateNode(data, { certname: 'n', producer_timestamp: '2025-01-02T00:00:00Z' }));
  t.equal(indexOf(data).resources.filter((r) => r.active).length, 0);
  const later = structuredClone(data);
  replaceCatalog(later, catalog('n', '2025-01-03T00:00:00Z', [web]));
  t.equal(later.nodes.n!.deactivated, null, 'reactivated by a newer catalog');
  t.equal(indexOf(later).resources.filter((r) => r.active).length, 1);
});

t.test("edge rows: a new catalog replaces its node's edges, the other nodes' rows are kept as they were", async (t) => {
  const data = emptyInventory();
  const edge = (target: string) => ({
    source: { type: 'Service', title: 'nginx' },
    target: { type: 'User', title: target },
    relationship: 'before',
  });
  const withEdges = (certname: string, at: string, target: string) => ({
    ...catalog(certname, at, [web, { ...user, title: target }]),
    edges: [edge(target)],
  });
  t.ok(replaceCatalog(data, withEdges('a', '2025-01-01T00:00:00Z', 'alice')));
  t.ok(replaceCatalog(data, withEdges('b', '2025-01-01T00:00:00Z', 'bob')));
  const targets = (edges: EdgeItem[]) => edges.map((e) => `${e.certname} -> ${e.target_title}`);
  const before = indexOf(data).edges;
  t.same(targets(before), ['a -> alice', 'b -> bob']);
  t.ok(replaceCatalog(data, withEdges('a', '2025-01-02T00:00:00Z', 'carol')));
  const after = indexOf(data).edges;
  t.same(targets(after), ['a -> carol', 'b -> bob']);
  t.equal(after[1], before[1], "b's edge row is the one built before");
});

t.test('reports: events derived from resources, duplicates ignored', async (t) => {
  const data = emptyInventory();
  const body = report('n', '2025-01-01T10:00:00Z', [
    changed('a'),
    { ...changed('b'), skipped: true },
    { ...changed('c'), events: [] },
  ]);
  const first = storeReport(data, body, 0);
  t.ok(first.stored);
  t.notOk(storeReport(data, body, 1).stored, 'same hash: ignored');
  const events = data.reports[0]!.events;
  t.same(
    events.map((e) => [e.resource_title, e.status]),
    [
      ['a', 'success'],
      ['b', 'skipped'],
    ],
  );
  t.equal(events[0]!.containing_class, 'Web');
});

t.test('malformed payloads are 400 naming the field, and store nothing', async (t) => {
  const data = emptyInventory();
  const bad: [unknown, RegExp][] = [
    [
      { command: 'replace catalog', version: 9, payload: { ...catalog('n', 'soon', [web]) } },
      /payload\.producer_timestamp: "soon" is not an ISO-8601 timestamp/,
    ],
    [
      {
        command: 'replace catalog',
        version: 9,
        payload: catalog('n', '2025-01-01T00:00:00Z', [{ ...web, tags: ['Web'] }]),
      },
      /payload\.resources\[0\]\.tags\[0\]: "Web" is not a valid tag/,
    ],
    [
      {
        command: 'store report',
        version: 8,
        payload: { ...report('n', '2025-01-01T00:00:00Z', []), transaction_uuid: 'x' },
      },
      /transaction_uuid: "x" is not a UUID/,
    ],
    [{ command: 'store report', version: 7, payload: {} }, /command\.version: 7 is not supported for store report/],
    [{ command: 'frobnicate', version: 1, payload: {} }, /command\.command: "frobnicate"/],
  ];
  for (const [body, message] of bad) t.throws(() => applyCommand(data, body, 0), message);
  t.same(data, emptyInventory());
});

const facts = (certname: string, at: string, values: object, more: object = {}) => ({
  certname,
  environment: 'production',
  producer: 'puppet.example',
  producer_timestamp: at,
  values,
  ...more,
});

t.test('replace facts: older ones ignored, newer ones replace whole and reactivate a node', async (t) => {
  const data = emptyInventory();
  const received = Date.parse('2025-01-02T00:00:09Z');
  t.ok(replaceFacts(data, facts('n', '2025-01-02T00:00:00Z', { a: 1, b: { c: 2 } }), received));
  t.notOk(replaceFacts(data, facts('n', '2025-01-01T00:00:00Z', { a: 'old' })), 'older facts are stale');
  t.ok(replaceFacts(data, facts('n', '2025-01-02T00:00:00Z', { a: 'same time' })), 'the same time applies');
  t.same(data.factsets.n!.values, { a: 'same time' }, 'the values are replaced whole');
  t.ok(deactivateNode(data, { certname: 'n', producer_timestamp: '2025-01-03T00:00:00Z' }));
  t.notOk(replaceFacts(data, facts('n', '2025-01-01T12:00:00Z', {})), 'older than the stored facts: stale');
  t.equal(data.nodes.n!.deactivated, Date.parse('2025-01-03T00:00:00Z'));
  t.ok(replaceFacts(data, facts('n', '2025-01-04T00:00:00Z', { a: 2 }), received));
  t.equal(data.nodes.n!.deactivated, null, 'newer facts reactivate the node');
  t.same(
    [data.factsets.n!.timestamp, data.factsets.n!.producer, data.factsets.n!.environment],
    [received, 'puppet.example', 'production'],
  );
  t.notOk(
    deactivateNode(data, { certname: 'n', producer_timestamp: '2025-01-03T12:00:00Z' }),
    'a deactivation older than the facts is stale',
  );
  const { producer: _, ...v4 } = facts('m', '2025-01-01T00:00:00Z', { a: 1 });
  t.ok(replaceFacts(data, v4, received, 4));
  t.equal(data.factsets.m!.producer, null, 'v4 has no producer');
});

t.test('malformed facts and catalog edges are refused naming the field', async (t) => {
  const refused = (body: object, message: RegExp) =>
    t.throws(() => applyCommand(emptyInventory(), body, 0), { status: 400, message }, message.source);
  const cmd = (version: number, payload: object) => ({ command: 'replace facts', version, payload });
  refused(cmd(5, facts('n', '2025-01-01T00:00:00Z', [])), /^payload\.values: expected an object of facts$/);
  refused(
    cmd(5, facts('n', '2025-01-01T00:00:00Z', { a: { b: 'x\u0000y' } })),
    /^payload\.values: a fact holds the character U\+0000, which nfv cannot store$/,
  );
  refused(cmd(4, facts('n', '2025-01-01T00:00:00Z', {})), /^payload\.producer: is not a field of this payload/);
  refused(cmd(5, facts('n', 'yesterday', {})), /^payload\.producer_timestamp: "yesterday" is not an ISO-8601/);
  refused(cmd(5, { ...facts('n', '2025-01-01T00:00:00Z', {}), certname: 7 }), /^payload\.certname: expected a string$/);
  refused(cmd(3, facts('n', '2025-01-01T00:00:00Z', {})), /^command\.version: 3 is not supported for replace facts/);
  refused(
    cmd(5, facts('n', '2025-01-01T00:00:00Z', {}, { package_inventory: 'x' })),
    /^payload\.package_inventory: expected an array$/,
  );
  const edge = { source: { type: 'A', title: 'a' }, target: { type: 'B', title: 'b' }, relationship: 'likes' };
  refused(
    { command: 'replace catalog', version: 9, payload: { ...catalog('n', '2025-01-01T00:00:00Z', []), edges: [edge] } },
    /^payload\.edges\[0\]\.relationship: "likes" is not one of contains, before, required-by/,
  );
  refused(
    {
      command: 'replace catalog',
      version: 9,
      payload: { ...catalog('n', '2025-01-01T00:00:00Z', []), edges: [{ ...edge, source: { type: 'A' } }] },
    },
    /^payload\.edges\[0\]\.source\.title: is required$/,
  );
  refused(
    {
      command: 'replace catalog',
      version: 9,
      payload: {
        ...catalog('n', '2025-01-01T00:00:00Z', [web]),
        edges: [{ ...edge, source: { type: 'Service', title: 'nginx' }, relationship: 'before' }],
      },
    },
    /^payload\.edges\[0\]\.target: "B\[b\]" is not a resource of this catalog$/,
  );
});
