/**
 * Errors in the user's words: one prefix, the user's own flag or argument, exit 2 for mistakes, empty lists exit 0.
 * Each test keeps at least one real bin/nfv process (exit code and message as the binary gives them); the other
 * commands run the CLI's own `run` in this process (test/cli/in-process.ts: the same code and answers, without
 * about 0.3 s of CPU to start each child).
 */
import path from 'node:path';
import { writeFile } from 'node:fs/promises';
import t from 'tap';
import { ROOT, cli, scratch } from '../helpers.js';
import { nfvInProcess } from './in-process.js';

const SAMPLE = path.join(ROOT, 'samples', 'office-nat.xml');
const GRAPHS = path.join(ROOT, 'test', 'fixtures', 'graphs.json');

t.test('empty lists exit 0: "no graphs" in a table, an empty list in JSON and XML', async (t) => {
  const ws = await scratch(t);
  for (const [group, what] of [
    ['graphs', 'graphs'],
    ['requirements', 'requirement sets'],
    ['substrates', 'substrates'],
    ['simulations', 'simulations'],
  ]) {
    // The first as the binary gives it, the others in process.
    const nfv = group === 'graphs' ? cli : nfvInProcess;
    const table = await nfv([group!, 'list', '--format', 'table'], { workspace: ws });
    t.equal(table.code, 0);
    t.equal(table.stdout, `no ${what}\n`);
  }
  const json = await nfvInProcess(['graphs', 'list', '--format', 'json'], { workspace: ws });
  t.same(JSON.parse(json.stdout).content, [{ graph: [] }]);
  t.same(JSON.parse((await nfvInProcess(['simulations', 'list'], { workspace: ws })).stdout), []);
  t.match(
    (await nfvInProcess(['graphs', 'list', '--format', 'xml'], { workspace: ws })).stdout,
    /<content>\s*<graphs\/>\s*<\/content>/,
  );
});

t.test('a workspace that is missing or not a folder is said as such', async (t) => {
  const ws = path.join(await scratch(t), 'missing');
  const r = await cli(['graphs', 'list', '-w', ws]);
  t.equal(r.code, 3);
  t.equal(r.stderr, `nfv: the workspace ${ws} does not exist\n`);
  t.equal(
    (await nfvInProcess(['inventory', 'resources', '-w', ws])).stderr,
    `nfv: the workspace ${ws} does not exist\n`,
  );
  t.equal(
    (await nfvInProcess(['graphs', 'list', '-w', '/etc/passwd'])).stderr,
    'nfv: the workspace /etc/passwd is not a folder\n',
  );
  t.equal(
    (await nfvInProcess(['graphs', 'create', '-f', GRAPHS, '-w', ws])).code,
    0,
    'a write creates a named workspace',
  );
});

t.test("OS errors on the user's paths are exit 2 naming the flag", async (t) => {
  const ws = await scratch(t);
  const fw = {
    name: '30.0.0.1',
    functionalType: 'FIREWALL',
    configuration: { name: 'c', firewall: { defaultAction: 'DENY' } },
  };
  t.equal((await nfvInProcess(['request', 'POST', '/fwd/nodes', '-d', JSON.stringify(fw)], { workspace: ws })).code, 0);
  const folder = await nfvInProcess(['deploy', 'iptables', '1', '-o', `${ws}/`], { workspace: ws });
  t.equal(folder.code, 2);
  t.equal(folder.stderr, `nfv: -o ${ws}/: it is a folder\n`);
  const missing = await nfvInProcess(['deploy', 'iptables', '1', '-o', '/missing/dir/f'], { workspace: ws });
  t.equal(missing.stderr, 'nfv: -o /missing/dir/f: no such file or folder\n');
  const unreadable = await cli(['graphs', 'create', '-f', '/missing/graphs.json'], { workspace: ws });
  t.equal(unreadable.code, 2);
  t.equal(unreadable.stderr, 'nfv: cannot read /missing/graphs.json: no such file or folder\n');
  await writeFile(path.join(ws, 'file'), 'x');
  const configured = path.join(ROOT, 'test', 'fixtures', 'nfv.xml');
  const simulated = await cli(['simulate', configured, '--format', 'xml'], { workspace: ws });
  await writeFile(path.join(ws, 'result.xml'), simulated.stdout);
  const files = await nfvInProcess(
    ['generate-files', path.join(ws, 'result.xml'), '-o', path.join(ws, 'file', 'out')],
    { workspace: ws },
  );
  t.equal(files.code, 2, files.stderr);
  t.match(files.stderr, /^nfv: -o .*file\/out: (it exists and is not a folder|a part of the path is not a folder)\n$/);
});

t.test('conflicting or incomplete arguments and formats a command cannot give are refused; flags named', async (t) => {
  const ws = await scratch(t);
  const cases: [string[], RegExp][] = [
    [['simulate', SAMPLE, '--gid', '1'], /^nfv: give a document \(.*office-nat\.xml\) or --gid, not both\n$/],
    [['simulate', '--rid', '1'], /^nfv: --rid goes with --gid/],
    [['fwd', 'nodes', 'list', '--from', '10', '--to', '1'], /^nfv: --from 10 is above --to 1\n$/],
    [['fwd', 'nodes', 'list', '--from', 'x'], /^nfv: --from: "x" is not a whole number/],
    [['inventory', 'resources', '--limit', '0'], /^nfv: --limit 0: give at least 1\n$/],
    [['inventory', 'resources', '--offset', '-3'], /^nfv: --offset: "-3" is not a whole number/],
    [['fwd', 'nodes', 'list', '--format', 'xml'], /^nfv: --format xml: this command answers in JSON \(or a table\)\n$/],
    [['inventory', 'resources', '--format', 'xml'], /^nfv: --format xml/],
    [['simulations', 'report', '1', '--format', 'xml'], /^nfv: --format xml/],
    [['help', 'nope'], /^nfv: help: there is no command 'nope'/],
    [['grahps', 'list'], /^nfv: unknown command 'grahps'/],
  ];
  for (const [args, message] of cases) {
    // The last (commander's own refusal) as the binary gives it, the others in process.
    const r = await (args[0] === 'grahps' ? cli : nfvInProcess)(args, { workspace: ws });
    t.equal(r.code, 2, args.join(' '));
    t.match(r.stderr, message);
  }
  t.equal((await nfvInProcess(['help', 'graphs', 'create'])).code, 0);
});

t.test('--quiet keeps stderr for errors only; --verbose says each request', async (t) => {
  const ws = await scratch(t);
  const quiet = await cli(['simulate', SAMPLE, '--format', 'json', '--quiet'], { workspace: ws });
  t.equal(quiet.code, 0);
  t.equal(quiet.stderr, '');
  const verbose = await nfvInProcess(['graphs', 'list', '-v'], { workspace: ws });
  t.match(verbose.stderr, /^GET \/adp\/graphs: 404 in [\d.]+ ms\n$/);
});

t.test('bulk-delete prompts say how many items go; nothing to delete needs no confirmation', async (t) => {
  const ws = await scratch(t);
  t.equal((await nfvInProcess(['graphs', 'delete-all'], { workspace: ws })).code, 0, 'nothing to delete');
  await nfvInProcess(['graphs', 'create', '-f', GRAPHS], { workspace: ws });
  const refused = await cli(['graphs', 'delete-all'], { workspace: ws });
  t.equal(refused.code, 2);
  t.match(refused.stderr, /^nfv: Delete the 1 graph\? Pass --yes to confirm when not on a terminal\.\n$/);
});
