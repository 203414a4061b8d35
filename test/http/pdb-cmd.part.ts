/**
 * `/pdb/cmd/v1` over a real listener, sent byte for byte as the Puppet 7.23 terminus sends it (puppet.md, (a) and
 * appendix 2): the query-parameter form with the terminus's checksum and headers, the bare payload as the body, for
 * a catalog and a report of `puppet apply`; then both read back through `/v4/resources` and `/v4/reports`.
 */
import { createHash } from 'node:crypto';
import { deflateSync, gzipSync } from 'node:zlib';
import t from 'tap';
import { rawRequest, startServer } from '../helpers.js';

const CERTNAME = 'node1.example.com';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const catalog = {
  certname: CERTNAME,
  version: '1795505240',
  environment: 'production',
  producer: 'puppet.example.com',
  producer_timestamp: '2026-11-24T07:13:46.956Z',
  transaction_uuid: null,
  catalog_uuid: 'e8c5ff96-2c1d-4a41-9a8e-0c0e4f6b1a52',
  code_id: null,
  job_id: null,
  resources: [
    {
      type: 'Stage',
      title: 'main',
      tags: ['stage', 'main'],
      exported: false,
      parameters: { name: 'main' },
      kind: 'compilable_type',
    },
    {
      type: 'Notify',
      title: 'greeting',
      tags: ['notify', 'greeting', 'class'],
      exported: false,
      file: '/etc/puppetlabs/code/site.pp',
      line: 3,
      parameters: { message: 'hello from nfv' },
      kind: 'compilable_type',
    },
    {
      type: 'File',
      title: '/tmp/nfv-acceptance',
      tags: ['file', 'class'],
      exported: false,
      file: '/etc/puppetlabs/code/site.pp',
      line: 4,
      parameters: { ensure: 'file', content: 'x\n' },
      kind: 'unknown',
    },
  ],
  edges: [
    {
      source: { type: 'Stage', title: 'main' },
      target: { type: 'Notify', title: 'greeting' },
      relationship: 'contains',
    },
    {
      source: { type: 'Notify', title: 'greeting' },
      target: { type: 'File', title: '/tmp/nfv-acceptance' },
      relationship: 'before',
    },
  ],
};

const report = {
  certname: CERTNAME,
  job_id: null,
  puppet_version: '7.23.0',
  report_format: 12,
  configuration_version: '1795505240',
  producer_timestamp: '2026-11-24T07:13:47.480+00:00',
  start_time: '2026-11-24T07:13:45.101+00:00',
  end_time: '2026-11-24T07:13:47.402+00:00',
  environment: 'production',
  transaction_uuid: 'a3b1f9e2-5d0c-4c59-8f3a-7b2d9c1e4f60',
  status: 'changed',
  noop: false,
  noop_pending: false,
  corrective_change: false,
  logs: [
    {
      file: null,
      line: null,
      level: 'notice',
      message: 'hello from nfv',
      source: 'Puppet',
      tags: ['notice'],
      time: '2026-11-24T07:13:47.302+00:00',
    },
  ],
  metrics: [{ category: 'time', name: 'total', value: 2.3 }],
  resources: [
    {
      skipped: false,
      timestamp: '2026-11-24T07:13:47.300+00:00',
      resource_type: 'Notify',
      resource_title: 'greeting',
      file: '/etc/puppetlabs/code/site.pp',
      line: 3,
      containment_path: ['Stage[main]', 'Main', 'Notify[greeting]'],
      corrective_change: false,
      events: [
        {
          status: 'success',
          timestamp: '2026-11-24T07:13:47.301+00:00',
          name: 'message',
          property: 'message',
          new_value: 'hello from nfv',
          old_value: 'absent',
          corrective_change: false,
          message: "defined 'message' as 'hello from nfv'",
        },
      ],
    },
  ],
  catalog_uuid: 'e8c5ff96-2c1d-4a41-9a8e-0c0e4f6b1a52',
  code_id: null,
  cached_catalog_status: 'not_used',
  producer: 'puppet.example.com',
};

/** What Puppet::Util::Puppetdb::Command#submit posts: parameters unencoded, checksum of the wrapped command. */
function terminusRequest(base: string, command: string, version: number, payload: object, at: string) {
  const body = JSON.stringify(payload);
  const head = `{"command":${JSON.stringify(command)},"version":${version},"certname":"${CERTNAME}"`;
  const wrapped = `${head},"payload":${body}}`;
  const checksum = createHash('sha1').update(wrapped).digest('hex');
  const name = command.replace(/ /g, '_');
  const target =
    `/pdb/cmd/v1?checksum=${checksum}&version=${version}&certname=${CERTNAME}` +
    `&command=${name}&producer-timestamp=${at}`;
  return rawRequest(base, 'POST', target, body, {
    'Content-Type': 'application/json; charset=utf-8',
    Accept: 'application/json',
    'Accept-Encoding': 'gzip;q=1.0,deflate;q=0.6,identity;q=0.3',
    'User-Agent': 'Puppet/7.23.0 Ruby/3.1.7-p261 (x86_64-linux-gnu)',
    'X-Puppet-Version': '7.23.0',
    'X-Uncompressed-Length': String(Buffer.byteLength(body)),
  });
}

t.test("a puppet apply's catalog and report, posted as the terminus does, read back", async (t) => {
  const server = await startServer();
  t.teardown(server.close);

  const stored = await terminusRequest(server.url, 'replace catalog', 9, catalog, '2026-11-24T07:13:46.956Z');
  t.equal(stored.status, 200, stored.text);
  t.match(stored.headers.get('content-type'), /^application\/json/);
  t.match(stored.json, { uuid: UUID });
  t.same(Object.keys(stored.json), ['uuid']);

  const filed = await terminusRequest(server.url, 'store report', 8, report, '2026-11-24T07:13:47.480Z');
  t.equal(filed.status, 200, filed.text);
  t.match(filed.json, { uuid: UUID });
  t.not(filed.json.uuid, stored.json.uuid);

  const query = encodeURIComponent(JSON.stringify(['=', 'certname', CERTNAME]));
  const resources = await rawRequest(
    server.url,
    'GET',
    `/v4/resources?query=${query}&order_by=${encodeURIComponent('[{"field":"title"}]')}`,
  );
  t.equal(resources.status, 200, resources.text);
  t.same(
    resources.json.map((r: any) => `${r.type}[${r.title}] ${r.environment}`),
    ['File[/tmp/nfv-acceptance] production', 'Notify[greeting] production', 'Stage[main] production'],
  );
  t.notOk('kind' in resources.json[0], 'kind is dropped');
  t.same(resources.json.find((r: any) => r.type === 'Notify').parameters, { message: 'hello from nfv' });

  const reports = await rawRequest(server.url, 'GET', `/v4/reports?query=${query}`);
  t.equal(reports.status, 200, reports.text);
  t.equal(reports.json.length, 1);
  t.match(reports.json[0], {
    certname: CERTNAME,
    status: 'changed',
    environment: 'production',
    configuration_version: '1795505240',
    cached_catalog_status: 'not_used',
  });
  const events = await rawRequest(server.url, 'GET', `/v4/reports/${reports.json[0].hash}/events`);
  t.same(
    events.json.map((e: any) => `${e.resource_type}[${e.resource_title}] ${e.status} ${e.new_value}`),
    ['Notify[greeting] success hello from nfv'],
  );

  // The same report again (a retry after a lost answer): judged stale, answered, stored once.
  const again = await terminusRequest(server.url, 'store report', 8, report, '2026-11-24T07:13:47.480Z');
  t.equal(again.status, 200);
  t.equal((await rawRequest(server.url, 'GET', `/v4/reports?query=${query}`)).json.length, 1);

  // A refusal as the terminus reads it: JSON with PuppetDB's words.
  const facts = await terminusRequest(
    server.url,
    'replace facts',
    5,
    {
      certname: CERTNAME,
      environment: 'production',
      producer: 'p',
      producer_timestamp: '2026-11-24T07:13:45.000Z',
      values: ['not', 'an', 'object'],
    },
    '2026-11-24T07:13:45.000Z',
  );
  t.equal(facts.status, 400);
  t.match(facts.headers.get('content-type'), /^application\/json/);
  t.same(facts.json, { error: 'payload.values: expected an object of facts' });
  const plain = await rawRequest(
    server.url,
    'POST',
    `/pdb/cmd/v1?command=store_report&version=8&certname=${CERTNAME}`,
    JSON.stringify(report),
    { 'Content-Type': 'text/plain' },
  );
  t.equal(plain.status, 415);
  t.same(plain.json, { error: 'content type text/plain not supported' });
});

t.test('gzip and deflate bodies on /pdb/cmd/v1, inflated within the body limit', async (t) => {
  const server = await startServer();
  t.teardown(server.close);
  const facts = {
    certname: CERTNAME,
    environment: 'production',
    producer: 'puppet.example.com',
    producer_timestamp: '2026-11-24T07:13:45.000Z',
    values: { kernel: 'Linux', os: { family: 'Debian' } },
  };
  const post = (body: Buffer, encoding: string, at = facts.producer_timestamp) =>
    rawRequest(server.url, 'POST', `/pdb/cmd/v1?command=replace_facts&version=5&certname=${CERTNAME}`, body, {
      'Content-Type': 'application/json',
      'Content-Encoding': encoding,
      'X-Uncompressed-Length': String(at.length),
    });
  const gzipped = await post(gzipSync(JSON.stringify(facts)), 'gzip');
  t.equal(gzipped.status, 200, gzipped.text);
  t.match(gzipped.json, { uuid: UUID });
  const later = { ...facts, producer_timestamp: '2026-11-24T08:00:00.000Z', values: { kernel: 'Deflated' } };
  t.equal((await post(deflateSync(JSON.stringify(later)), 'deflate')).status, 200);
  const read = await rawRequest(server.url, 'GET', '/pdb/query/v4/facts/kernel');
  t.same(read.json, [{ certname: CERTNAME, environment: 'production', name: 'kernel', value: 'Deflated' }]);

  const refusals: [Buffer, string, number, RegExp][] = [
    [Buffer.from('not gzip at all'), 'gzip', 400, /^the request body is not valid gzip data: /],
    [gzipSync(JSON.stringify(facts)), 'br', 415, /^Content-Encoding br is not supported \(gzip, deflate\)$/],
    // 40 MB of spaces in 40 KB: inflating stops at the 32 MiB body limit.
    [gzipSync(Buffer.alloc(40 * 1024 * 1024, ' ')), 'gzip', 413, /^request body larger than \d+ bytes once inflated$/],
  ];
  for (const [body, encoding, status, message] of refusals) {
    const refused = await post(body, encoding);
    t.equal(refused.status, status, `${encoding}: ${status}`);
    t.match(refused.json?.error, message);
  }
  const after = await rawRequest(server.url, 'GET', '/pdb/query/v4/facts/kernel');
  t.same(after.json, read.json, 'the refused bodies changed nothing');
});
