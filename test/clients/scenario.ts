/**
 * What test/clients checks, in order: `puppet apply` of site.pp's fleet through the PuppetDB terminus to every
 * backend's serve at once (a changing run and an unchanged second one, a failing run, a --noop run, `puppet node
 * deactivate`), then web1 once per serve with that serve alone (it collects db1's exported file and asks
 * puppetdb_query() with PQL and an AST, and queries go to one server), then on each backend what nfv answers at
 * /pdb/query/v4, pypuppetdb 2.2.0 and 3.1.0 reading it, and every Puppetboard page.
 */
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { checksOf, startFleet, type Backend, type ClientRun, type Fleet, type Server } from './fleet.js';

/** The nodes still active at the end: every node of site.pp but gone1, in certname order. */
export const ACTIVE = [
  'app1.example.com',
  'db1.example.com',
  'fail1.example.com',
  'noop1.example.com',
  'web1.example.com',
];

/** The Notify[pql] message web1's manifest builds from its three puppetdb_query() answers. */
const PQL_MESSAGE = `failed=fail1.example.com db=db1.example.com active=${ACTIVE.join(',')}`;

/** A client's checks (`server`'s alone when given) as tap assertions; its exit code and stderr when it failed. */
function report(t: Tap.Test, what: string, ran: ClientRun, least: number, server?: Server): void {
  const checks = checksOf(ran.stdout).filter((c) => !server || c.server === server.name);
  for (const c of checks) t.ok(c.ok, `${what}: ${c.check}`, c.ok ? {} : { got: c.got });
  t.ok(checks.length >= least, `${what}: ${checks.length} checks made (at least ${least})`);
  t.equal(ran.code, 0, `${what} exits 0`, ran.code === 0 ? {} : { stderr: ran.stderr.slice(-4000) });
}

const query = (target: string, q: unknown) => `${target}?query=${encodeURIComponent(JSON.stringify(q))}`;

export function fleetTests(t: Tap.Test, backends: Backend[]): void {
  let fleet: Fleet;

  t.before(async () => {
    fleet = await startFleet(t, backends);
  });

  t.test('puppet apply stores the fleet through the PuppetDB terminus, to every serve', async (t) => {
    const expect = async (certname: string, extra: string[], code: number, said: RegExp, to?: Server) => {
      const ran = await fleet.apply(certname, extra, to);
      const what = `${certname} ${extra.join(' ')}${to ? ` (${to.name})` : ''}`;
      // --detailed-exitcodes: 0 nothing changed, 2 changes, 4 failures.
      t.equal(ran.code, code, `${what} exits ${code}`, { output: ran.output.slice(-3000) });
      t.match(ran.output, said, `${what}: ${said}`);
      t.notMatch(ran.output, /Failed to (submit|find)|PuppetDB|server_url/i, 'the terminus complains of nothing');
    };
    await expect('app1.example.com', [], 2, /app1\.conf\]\/ensure: defined content/);
    await expect('app1.example.com', [], 0, /Applied catalog/);
    await expect('db1.example.com', [], 2, /db1\.conf\]\/ensure: defined content/);
    await expect('fail1.example.com', [], 4, /Skipping because of failed dependencies/);
    await expect('noop1.example.com', ['--noop'], 0, /current_value 'absent', should be 'file' \(noop\)/);
    await expect('gone1.example.com', [], 2, /about to be deactivated/);
    const gone = await fleet.deactivate('gone1.example.com');
    t.equal(gone.code, 0, 'puppet node deactivate exits 0', { output: gone.output });
    t.match(gone.output, /Submitted 'deactivate node' for gone1\.example\.com with UUID [0-9a-f-]{36}/);
    const exported = path.join(fleet.dir, 'exported-db1.example.com');
    for (const server of fleet.servers) {
      // What the last run wrote goes, so that this serve's run writes it again: each serve's web1 run changed.
      await rm(exported, { force: true });
      await rm(path.join(fleet.dir, 'web1.conf'), { force: true });
      await expect('web1.example.com', [], 2, /exported-db1\.example\.com\]\/ensure: defined content/, server);
      t.equal(
        await readFile(exported, 'utf8'),
        'exported by db1.example.com\n',
        `web1 wrote the file db1 exported, with db1's content (${server.name})`,
      );
    }
  });

  // Each serve is asked the same things in the same order as when a file tested one backend: nfv's own requests,
  // pypuppetdb 2.2.0, 3.1.0, then Puppetboard (each one process for every serve).
  const each = (name: string, check: (t: Tap.Test, server: Server) => Promise<void>) =>
    t.test(name, async (t) => {
      for (const server of fleet.servers) await t.test(`on the ${server.name}`, (t) => check(t, server));
    });

  each('what nfv answers at /pdb/query/v4 after the runs', (t, server) => answers(t, fleet, server));

  t.test('pypuppetdb 2.2.0 (Debian) reads the fleet and sends a command', async (t) => {
    const ran = await pypuppetdb(fleet, []);
    for (const server of fleet.servers)
      await t.test(`on the ${server.name}`, async (t) => report(t, 'pypuppetdb 2.2.0', ran, 34, server));
  });

  t.test('pypuppetdb 3.1.0 (vendored) reads the fleet and sends a command', async (t) => {
    const ran = await pypuppetdb(fleet, [await fleet.vendor('pypuppetdb-3.1.0')]);
    for (const server of fleet.servers)
      await t.test(`on the ${server.name}`, async (t) => report(t, 'pypuppetdb 3.1.0', ran, 37, server));
  });

  // puppetboard_crawl.py imports Puppetboard afresh for each serve, Flask and the rest once (about 0.7 CPU s).
  t.test('every Puppetboard 4.2.6 page answers 200 with what the fleet holds', async (t) => {
    const pypuppetdb = await fleet.vendor('pypuppetdb-3.1.0');
    const board = await fleet.vendor('puppetboard-4.2.6');
    const ran = await fleet.python('puppetboard_crawl.py', [pypuppetdb, board], {
      NFV_SERVERS: serversOf(fleet),
      PUPPETDB_HOST: '127.0.0.1',
      PUPPETBOARD_SETTINGS: 'docker_settings.py',
      PUPPETDB_PROTO: 'https',
      PUPPETDB_SSL_VERIFY: fleet.tls.ca,
      PUPPETDB_CERT: fleet.tls.cert,
      PUPPETDB_KEY: fleet.tls.key,
      SECRET_KEY: 'nfv-test',
      ENABLE_CATALOG: 'true',
      // puppet apply stores trusted.hostname as null, which the default Inventory column cannot show (PuppetDB too).
      INVENTORY_FACTS: 'Hostname,fqdn,Role,nfv_role,Kernel Version,kernelrelease',
    });
    for (const server of fleet.servers)
      await t.test(`on the ${server.name}`, async (t) => report(t, 'Puppetboard', ran, 40, server));
  });
}

/** What one serve answers at /pdb/query/v4 after the runs. */
async function answers(t: Tap.Test, fleet: Fleet, server: Server): Promise<void> {
  const nodes = await server.get(`/pdb/query/v4/nodes?order_by=${encodeURIComponent('[{"field":"certname"}]')}`);
  t.equal(nodes.status, 200);
  const rows = nodes.json as Record<string, unknown>[];
  t.same(
    rows.map((n) => n.certname),
    ACTIVE,
    'the active nodes: every node but the deactivated one',
  );
  const status = new Map(rows.map((n) => [n.certname, [n.latest_report_status, n.latest_report_noop]]));
  t.same(Object.fromEntries(status), {
    'app1.example.com': ['unchanged', false],
    'db1.example.com': ['changed', false],
    'fail1.example.com': ['failed', false],
    'noop1.example.com': ['unchanged', true],
    'web1.example.com': ['changed', false],
  });
  for (const n of rows) {
    t.equal(n.catalog_environment, 'production', `${n.certname}: catalog environment`);
    t.match(n.facts_timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, `${n.certname}: facts stored`);
  }

  const gone = await server.get('/pdb/query/v4/nodes/gone1.example.com');
  t.equal(gone.status, 200);
  t.match(gone.json, { certname: 'gone1.example.com', latest_report_status: 'changed' });
  t.match(gone.json.deactivated, /^\d{4}-/, 'gone1 is deactivated');

  const app1 = await server.get(
    query('/pdb/query/v4/reports', ['=', 'certname', 'app1.example.com']) +
      `&order_by=${encodeURIComponent('[{"field":"producer_timestamp"}]')}`,
  );
  t.same(
    (app1.json as Record<string, unknown>[]).map((r) => [r.status, r.puppet_version, r.noop]),
    [
      ['changed', '7.23.0', false],
      ['unchanged', '7.23.0', false],
    ],
    "app1's two reports: changed, then unchanged",
  );

  const exported = await server.get(query('/pdb/query/v4/resources', ['=', 'exported', true]));
  t.same(
    (exported.json as Record<string, unknown>[]).map((r) => [r.certname, r.type, r.title, r.tags]),
    [
      [
        'db1.example.com',
        'File',
        path.join(fleet.dir, 'exported-db1.example.com'),
        ['class', 'db1.example.com', 'file', 'fleet', 'node'],
      ],
    ],
    'one exported resource, from db1',
  );

  const title = encodeURIComponent(path.join(fleet.dir, 'web1.conf'));
  const file = await server.get(`/pdb/query/v4/resources/File/${title}`);
  t.equal(file.status, 200, 'a file path is a title');
  t.same(
    (file.json as Record<string, unknown>[]).map((r) => r.certname),
    ['web1.example.com'],
  );

  const pql = await server.get('/pdb/query/v4/resources/Notify/pql');
  t.same(
    (pql.json as { parameters: Record<string, unknown> }[]).map((r) => r.parameters.message),
    [PQL_MESSAGE],
    "web1's puppetdb_query() calls (PQL over nodes and inventory, an AST) answered as the fleet was then",
  );

  const catalog = await server.get('/pdb/query/v4/catalogs/web1.example.com');
  t.equal(catalog.status, 200);
  t.same(
    (catalog.json.edges.data as Record<string, string>[]).filter((e) => e.relationship === 'before'),
    [
      {
        source_type: 'Notify',
        source_title: 'pql',
        target_type: 'File',
        target_title: path.join(fleet.dir, 'web1.conf'),
        relationship: 'before',
      },
    ],
    "web1's catalog keeps the before edge",
  );

  const failures = await server.get(query('/pdb/query/v4/events', ['=', 'status', 'failure']));
  t.same(
    (failures.json as Record<string, unknown>[]).map((e) => [e.certname, e.resource_type, e.resource_title]),
    [['fail1.example.com', 'File', path.join(fleet.dir, 'missing', 'fail1.conf')]],
    'the one failure event',
  );

  const noop = await server.get(
    `/pdb/query/v4?query=${encodeURIComponent('nodes[certname] { latest_report_noop = true }')}`,
  );
  t.same(noop.json, [{ certname: 'noop1.example.com' }], 'PQL at the root endpoint');

  const roles = await server.get(query('/pdb/query/v4/facts', ['=', 'name', 'nfv_role']));
  t.same(
    (roles.json as Record<string, unknown>[]).map((f) => [f.certname, f.value]).sort(),
    ACTIVE.map((c) => [c, c.replace(/\d.*$/, '')]),
    "every active node's role fact",
  );
}

/** The serves as the Python clients take them: NFV_SERVERS=name=port,... (each check line names its serve). */
const serversOf = (fleet: Fleet) => fleet.servers.map((s) => `${s.name}=${s.port}`).join(',');

/**
 * The pypuppetdb checks with the pypuppetdb found first on `pythonPath` (Debian's when empty): one process checks
 * every serve in turn (a Python start importing requests and pypuppetdb is about 0.4 s of CPU).
 */
const pypuppetdb = (fleet: Fleet, pythonPath: string[]) =>
  fleet.python('pypuppetdb_check.py', pythonPath, {
    NFV_SERVERS: serversOf(fleet),
    NFV_CA: fleet.tls.ca,
    NFV_CERT: fleet.tls.cert,
    NFV_KEY: fleet.tls.key,
    NFV_ACTIVE: ACTIVE.join(','),
    NFV_PQL_MESSAGE: PQL_MESSAGE,
  });
