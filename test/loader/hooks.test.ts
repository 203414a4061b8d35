/**
 * test/loader/hooks.mjs, the TypeScript every test process runs through: a .ts file runs with its types stripped,
 * `./x.js` finds x.ts, a stack names the .ts line (the inline source map), a syntax error names the file, and the
 * transpiled text is cached once per file text in .tap/ts-cache and read back, not written again.
 */
import { readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { ROOT, runProcess, scratch } from '../helpers.js';

const CACHE = path.join(ROOT, '.tap', 'ts-cache');
const REGISTER = path.join(ROOT, 'test', 'loader', 'register.mjs');

/** node with the loader only (no tap hooks), as `node --import ./test/loader/register.mjs FILE` runs one file. */
const run = (t: Tap.Test, file: string) =>
  runProcess(t, '/usr/bin/env', [
    '-u',
    'NODE_OPTIONS',
    process.execPath,
    '--enable-source-maps',
    '--import',
    REGISTER,
    file,
  ]);

/** The cache entries holding `token`, with their modification times. */
async function entriesWith(token: string) {
  const found: { file: string; mtimeMs: number }[] = [];
  for (const name of await readdir(CACHE).catch(() => [] as string[])) {
    const file = path.join(CACHE, name);
    const text = await readFile(file, 'utf8').catch(() => '');
    if (text.includes(token)) found.push({ file, mtimeMs: (await stat(file)).mtimeMs });
  }
  return found;
}

t.test('a .ts file runs, imports ./b.js as b.ts, and is cached once per text', async (t) => {
  const dir = await scratch(t);
  // The token names this test's cache entries (the key holds the file's path, which is new every run): removed after.
  const token = `loader-test-${path.basename(dir)}`;
  t.teardown(async () => {
    for (const { file } of await entriesWith(token)) await rm(file, { force: true });
  });
  await writeFile(path.join(dir, 'b.ts'), `export const twice = (n: number): number => 2 * n; // ${token}\n`);
  const main = path.join(dir, 'a.ts');
  await writeFile(main, `import { twice } from './b.js';\nconst n: number = 21;\nconsole.log(twice(n), '${token}');\n`);
  const first = await run(t, main);
  t.equal(first.code, 0, first.stderr);
  t.equal(first.stdout, `42 ${token}\n`, 'types stripped, ./b.js found as b.ts');
  const cached = await entriesWith(token);
  t.equal(cached.length, 2, 'one entry per file');
  for (const { file } of cached) {
    const text = await readFile(file, 'utf8');
    const map = JSON.parse(Buffer.from(/base64,(\S+)$/.exec(text)![1]!, 'base64').toString('utf8'));
    t.same(map.sources, [map.file], `${path.basename(file)}: the source map names the .ts file by its full path`);
    t.ok([main, path.join(dir, 'b.ts')].includes(map.file), map.file);
    t.match(map.sourcesContent?.[0], token, 'and holds its text');
  }

  const again = await run(t, main);
  t.equal(again.stdout, first.stdout, 'the same answer from the cache');
  t.same(await entriesWith(token), cached, 'read back, nothing written again');

  await writeFile(main, `import { twice } from './b.js';\nconst n: number = 4;\nconsole.log(twice(n), '${token}');\n`);
  const changed = await run(t, main);
  t.equal(changed.stdout, `8 ${token}\n`, 'a changed file runs as changed');
  t.equal((await entriesWith(token)).length, 3, 'one more entry, for the new text');
});

t.test('a stack names the .ts line; a syntax error names the file', async (t) => {
  const dir = await scratch(t);
  const token = `loader-test-${path.basename(dir)}`;
  t.teardown(async () => {
    for (const { file } of await entriesWith(token)) await rm(file, { force: true });
  });
  const thrower = path.join(dir, 'throws.ts');
  await writeFile(thrower, `type N = number;\nconst n: N = 1;\nconst tag = '${token}';\nthrow new Error(tag + n);\n`);
  const thrown = await run(t, thrower);
  t.not(thrown.code, 0);
  // Line 4 of the .ts file (the transpiled text has it on line 3: the type alias is gone).
  t.match(thrown.stderr, 'throws.ts:4:', 'the line of the .ts file, through the inline source map');

  const broken = path.join(dir, 'broken.ts');
  await writeFile(broken, `// ${token}\nconst x: number = ;\n`);
  const refused = await run(t, broken);
  t.not(refused.code, 0);
  t.match(refused.stderr, /SyntaxError/);
  t.match(refused.stderr, 'broken.ts', 'the file is named');
  t.equal((await entriesWith(token)).length, 1, 'nothing cached for the file that does not transpile');
});

t.test('a test process resolves through this loader, not through ts-node', async (t) => {
  // .taprc leaves tap's @tapjs/typescript plugin out, and its test-env TAP_TYPE_STRIP_ONLY=1 makes the plugin's
  // --import load nothing in the one run that rebuilds tap without it (ts-node cost about 0.9 CPU s a process). A
  // resolve that fails names every resolve hook of the chain in its stack.
  const name = 'nfv-no-such-package';
  const stack = String(((await import(name).catch((e: unknown) => e)) as Error).stack);
  t.match(stack, /test\/loader\/hooks\.mjs/, 'resolved through test/loader/hooks.mjs');
  t.notMatch(stack, /ts-node/, 'no ts-node hook in the chain');
});
