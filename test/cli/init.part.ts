/** nfv init: a workspace folder with the samples, never overwriting; it asks only on a terminal. */
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { ROOT, cli, scratch } from '../helpers.js';

t.test('init makes the folder, copies the samples, and never overwrites', async (t) => {
  const dir = path.join(await scratch(t), 'new', 'ws');
  const first = await cli(['init', dir]);
  t.equal(first.code, 0, first.stderr);
  t.equal(first.stdout, `${dir}\n`);
  t.same((await readdir(path.join(dir, 'samples'))).sort(), (await readdir(path.join(ROOT, 'samples'))).sort());
  await writeFile(path.join(dir, 'samples', 'office-nat.xml'), 'mine');
  const again = await cli(['init', dir]);
  t.equal(again.code, 0, 'off a terminal it does not ask');
  t.match(again.stderr, /the samples were there already/);
  t.equal(await readFile(path.join(dir, 'samples', 'office-nat.xml'), 'utf8'), 'mine');
  const run = await cli(['simulate', path.join(dir, 'samples', 'web-farm.xml'), '--format', 'json', '-w', dir]);
  t.equal(run.code, 0, 'the new workspace works');
});
