/**
 * The /adp operations through the CLI: data on stdout, one-line errors, exit codes. In the test process (the CLI's
 * own run, test/cli/in-process.ts), but stdin, which goes through bin/nfv as a child process with a real pipe.
 */
import path from 'node:path';
import t from 'tap';
import { cli, fixture, scratch } from '../helpers.js';
import { nfvInProcess } from './in-process.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './completion.part.js';
import './draw.part.js';
import './help.part.js';
import './man.part.js';
import './tables.part.js';

type Run = (args: string[], input?: string) => ReturnType<typeof cli>;

/** A fresh workspace for one test, removed when it ends, and a runner of the CLI on it. */
async function workspace(t: Tap.Test, child = false): Promise<Run> {
  const ws = await scratch(t);
  return (args, input) => (child ? cli : nfvInProcess)(args, { workspace: ws, input });
}

const GRAPHS_XML = path.join('test', 'fixtures', 'graphs.xml');

t.test('create from a file, read back as JSON, XML and a table', async (t) => {
  const run = await workspace(t);
  const created = await run(['graphs', 'create', '-f', GRAPHS_XML]);
  t.equal(created.code, 0, created.stderr);
  t.same(JSON.parse(created.stdout).content, [[1]], 'JSON when piped');
  const xml = await run(['graphs', 'get', '1', '--format', 'xml']);
  t.match(xml.stdout, /^<\?xml[\s\S]*<entities>[\s\S]*<graph id="1"/);
  const table = await run(['graphs', 'get', '1', '--format', 'table']);
  t.match(table.stdout, /40\.0\.0\.1\s*│ FIREWALL/);
  // eslint-disable-next-line no-control-regex -- an ANSI escape is what must not appear
  t.notMatch(table.stdout, /\u001b\[/, 'no colour codes when NO_COLOR is set');
  t.equal(table.stderr, '');
});

t.test('input from stdin, in either format', async (t) => {
  const run = await workspace(t, true);
  const fromStdin = await run(['graphs', 'create'], await fixture('graphs.json'));
  t.equal(fromStdin.code, 0, fromStdin.stderr);
  t.same(JSON.parse(fromStdin.stdout).content, [[1]]);
  const dash = await run(
    ['nodes', 'add', '1', '-f', '-', '--in', 'xml'],
    '<node name="9.9.9.9" functional_type="FORWARDER"/>',
  );
  t.equal(dash.code, 0, dash.stderr);
  t.equal(JSON.parse(dash.stdout).content.length, 1);
});

t.test('what one command prints, the next can read', async (t) => {
  const run = await workspace(t);
  await run(['graphs', 'create', '-f', GRAPHS_XML]);
  const got = await run(['graphs', 'get', '1', '--format', 'xml']);
  const put = await run(['graphs', 'update', '1'], got.stdout);
  t.equal(put.code, 0, put.stderr);
  t.equal(put.stdout, '', 'updates print no data');
  // Neighbours and configurations get fresh ids on every write, as in the reference; the rest is unchanged.
  const withoutInnerIds = (xml: string) => xml.replace(/<(neighbour|configuration) id="\d+"/g, '<$1');
  const again = await run(['graphs', 'get', '1', '--format', 'xml']);
  t.equal(withoutInnerIds(again.stdout), withoutInnerIds(got.stdout), 'the round trip changes nothing');
});

t.test('errors: one line on stderr, a distinct exit code, nothing changed', async (t) => {
  const run = await workspace(t);
  await run(['graphs', 'create', '-f', GRAPHS_XML]);
  const before = (await run(['graphs', 'list'])).stdout;
  const invalid = await run(
    ['graphs', 'create'],
    '<graphs><graph><node name="a" functional_type="FIREWAL"/></graph></graphs>',
  );
  t.equal(invalid.code, 2);
  t.equal(invalid.stdout, '');
  t.match(
    invalid.stderr,
    /^nfv: graphs\.graph\[0\]\.node\[0\]\.functional_type: "FIREWAL" is not a functional type\n$/,
  );
  const missing = await run(['graphs', 'get', '42']);
  t.equal(missing.code, 3);
  t.match(missing.stderr, /^nfv: graph 42 does not exist\n$/);
  await run(
    ['requirements', 'create'],
    JSON.stringify({ property: [{ name: 'ISOLATION_PROPERTY', graph: 1, src: '10.0.0.1', dst: '20.0.0.1' }] }),
  );
  const referred = await run(['graphs', 'delete', '1']);
  t.equal(referred.code, 4);
  t.match(referred.stderr, /referred to by property/);
  const dependency = await run(
    ['requirements', 'create'],
    JSON.stringify({ property: [{ name: 'ISOLATION_PROPERTY', graph: 9, src: 'a', dst: 'b' }] }),
  );
  t.equal(dependency.code, 4);
  t.equal((await run(['graphs', 'list'])).stdout, before);
  const usage = await run(['graphs', 'frobnicate']);
  t.equal(usage.code, 2);
  t.match(usage.stderr, /unknown command/);
  const noFile = await run(['graphs', 'create', '-f', 'does-not-exist.xml']);
  t.equal(noFile.code, 2);
  t.match(noFile.stderr, /cannot read does-not-exist\.xml: no such file or folder/);
});

t.test('bulk deletes ask for --yes when not on a terminal', async (t) => {
  const run = await workspace(t);
  const empty = await run(['substrates', 'delete-all']);
  t.equal(empty.code, 0, 'nothing to delete needs no confirmation; 304 is not a failure');
  t.match(empty.stderr, /no substrates to delete/);
  await run(['substrates', 'create']);
  const refused = await run(['substrates', 'delete-all']);
  t.equal(refused.code, 2);
  t.match(refused.stderr, /Delete the 1 substrate\? Pass --yes/);
  t.same(JSON.parse((await run(['substrates', 'list'])).stdout).content, [[1]], 'nothing deleted');
  t.equal((await run(['substrates', 'delete-all', '--yes'])).code, 0);
  t.same(JSON.parse((await run(['substrates', 'list'])).stdout).content, [[]], 'all deleted');
});

t.test('substrates with hosts and connections', async (t) => {
  const run = await workspace(t);
  t.same(JSON.parse((await run(['substrates', 'create'])).stdout).content, [1]);
  const hosts = await run(['substrates', 'hosts', 'add', '1'], '<Hosts><Host name="a"/><Host name="b"/></Hosts>');
  t.equal(hosts.code, 0, hosts.stderr);
  t.equal(
    (await run(['substrates', 'connections', 'add', '1'], '{"connection":[{"sourceHost":"a","destHost":"b"}]}')).code,
    0,
  );
  const conns = JSON.parse((await run(['substrates', 'connections', 'list', '1'])).stdout);
  t.equal(conns.content[0].connection[0].destHost, 'b');
  t.equal((await run(['substrates', 'hosts', 'delete', '1', 'a'])).code, 4, 'host in a connection');
});

t.test('nfv request dispatches any path of the table', async (t) => {
  const run = await workspace(t);
  await run(['graphs', 'create', '-f', GRAPHS_XML]);
  await run(['substrates', 'create']);
  await run(
    ['requirements', 'create'],
    JSON.stringify({ property: [{ name: 'ISOLATION_PROPERTY', graph: 1, src: '10.0.0.1', dst: '20.0.0.1' }] }),
  );
  const ok = await run(['request', 'GET', '/adp/substrates']);
  t.same(JSON.parse(ok.stdout).content, [[1]]);
  const body = await run(
    ['request', 'POST', '/adp/requirements/1/properties', '-d', '-'],
    '<Property name="ReachabilityProperty" graph="1" src="10.0.0.1" dst="20.0.0.1"/>',
  );
  t.equal(body.code, 0, body.stderr);
  const failed = await run(['request', 'GET', '/adp/graphs/77']);
  t.equal(failed.code, 3);
  t.equal(JSON.parse(failed.stdout).error.status, 404, 'the error envelope is printed like serve mode answers it');
  t.equal((await run(['request', 'PATCH', '/adp/graphs'])).code, 2, '405');
  t.equal((await run(['request', 'GET', '/nowhere'])).code, 3);
});

t.test('help and version', async (t) => {
  const run = await workspace(t);
  const help = await run(['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /graphs\s+graphs of network functions/);
  t.match((await run(['--version'])).stdout, /^\d+\.\d+\.\d+/);
});
