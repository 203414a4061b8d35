/**
 * test/loader/hooks.mjs, the TypeScript every test process runs through: a .ts file runs with its types stripped,
 * `./x.js` finds x.ts (an x.js still first), a stack names the .ts line (the source map beside the cached code), a
 * syntax error names the file, and the transpiled text is cached once per file text in .tap/ts-cache and read back,
 * not written again; as tap starts a test process, a failure names the .ts file and line, and packages' modules
 * come without their source maps; tap is one bundled module, built again when one of its files changes.
 */
import { mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
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

/** The cache entries (code, and its map beside it) holding `token`, with their modification times. */
async function entriesWith(token: string) {
  const found: { file: string; mtimeMs: number; mapMtimeMs: number }[] = [];
  for (const name of await readdir(CACHE).catch(() => [] as string[])) {
    const file = path.join(CACHE, name);
    if (!file.endsWith('.js')) continue;
    const text = await readFile(file, 'utf8').catch(() => '');
    const mapMtimeMs = (await stat(`${file}.map`).catch(() => undefined))?.mtimeMs ?? -1;
    if (text.includes(token)) found.push({ file, mtimeMs: (await stat(file)).mtimeMs, mapMtimeMs });
  }
  return found;
}

/** Removes the cache entries holding `token`, their maps with them. */
async function removeEntries(token: string) {
  for (const { file } of await entriesWith(token)) await Promise.all([rm(file), rm(`${file}.map`, { force: true })]);
}

t.test('a .ts file runs, imports ./b.js as b.ts, and is cached once per text', async (t) => {
  const dir = await scratch(t);
  // The token names this test's cache entries (the key holds the file's path, which is new every run): removed after.
  const token = `loader-test-${path.basename(dir)}`;
  t.teardown(() => removeEntries(token));
  await writeFile(path.join(dir, 'b.ts'), `export const twice = (n: number): number => 2 * n; // ${token}\n`);
  const main = path.join(dir, 'a.ts');
  await writeFile(main, `import { twice } from './b.js';\nconst n: number = 21;\nconsole.log(twice(n), '${token}');\n`);
  const first = await run(t, main);
  t.equal(first.code, 0, first.stderr);
  t.equal(first.stdout, `42 ${token}\n`, 'types stripped, ./b.js found as b.ts');
  const cached = await entriesWith(token);
  t.equal(cached.length, 2, 'one entry per file');
  for (const { file, mapMtimeMs } of cached) {
    const text = await readFile(file, 'utf8');
    t.ok(text.endsWith(`\n//# sourceMappingURL=${file}.map\n`), `${path.basename(file)}: the code names its map`);
    t.ok(mapMtimeMs >= 0, 'which is there');
    const map = JSON.parse(await readFile(`${file}.map`, 'utf8'));
    t.same(map.sources, [map.file], `${path.basename(file)}: the source map names the .ts file by its full path`);
    t.ok([main, path.join(dir, 'b.ts')].includes(map.file), map.file);
    t.equal(map.sourcesContent, undefined, 'and holds no copy of its text (read from the .ts file when needed)');
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
  t.teardown(() => removeEntries(token));
  const thrower = path.join(dir, 'throws.ts');
  await writeFile(thrower, `type N = number;\nconst n: N = 1;\nconst tag = '${token}';\nthrow new Error(tag + n);\n`);
  const thrown = await run(t, thrower);
  t.not(thrown.code, 0);
  // Line 4 of the .ts file (the transpiled text has it on line 3: the type alias is gone).
  t.match(thrown.stderr, 'throws.ts:4:', 'the line of the .ts file, through its source map');

  const broken = path.join(dir, 'broken.ts');
  await writeFile(broken, `// ${token}\nconst x: number = ;\n`);
  const refused = await run(t, broken);
  t.not(refused.code, 0);
  t.match(refused.stderr, /SyntaxError/);
  t.match(refused.stderr, 'broken.ts', 'the file is named');
  t.equal((await entriesWith(token)).length, 1, 'nothing cached for the file that does not transpile');
});

t.test('./x.js is x.js where it exists, else x.ts; ../ and absolute paths alike', async (t) => {
  const dir = await scratch(t);
  const token = `loader-test-${path.basename(dir)}`;
  t.teardown(() => removeEntries(token));
  await writeFile(path.join(dir, 'c.js'), `export const which = 'c.js';\n`);
  await writeFile(path.join(dir, 'c.ts'), `export const which: string = 'c.ts';\n`);
  await writeFile(path.join(dir, 'd.ts'), `export const which: string = 'd.ts'; // ${token}\n`);
  const sub = path.join(dir, 'sub');
  await mkdir(sub);
  const main = path.join(sub, 'main.ts');
  await writeFile(
    main,
    `import { which as c } from '../c.js';\nimport { which as d } from '${path.join(dir, 'd.js')}';\n` +
      `console.log(c, d, '${token}');\n`,
  );
  const ran = await run(t, main);
  t.equal(ran.code, 0, ran.stderr);
  t.equal(ran.stdout, `c.js d.ts ${token}\n`, 'the .js that exists, and the .ts for the one that does not');
});

t.test(
  'as tap starts a test process, and alone: a failure names the .ts line; packages come without maps',
  async (t) => {
    const dir = await scratch(t);
    const token = `loader-test-${path.basename(dir)}`;
    t.teardown(() => removeEntries(token));
    const file = path.join(dir, 'fails.test.ts');
    // tap by its URL: the scratch folder has no node_modules.
    const tap = import.meta.resolve('tap');
    await writeFile(
      file,
      [
        `import { findSourceMap } from 'node:module';`,
        `import t from '${tap}';`,
        `type N = number;`,
        `const n: N = 1;`,
        `t.equal(n, 2, '${token}');`,
        `const maps = { tap: findSourceMap('${tap}') !== undefined, file: !!findSourceMap(import.meta.url) };`,
        `console.log('maps:', JSON.stringify(maps));`,
        '',
      ].join('\n'),
    );
    // tap's own arguments and processinfo's variables (@tapjs/run's test-argv.js and run.js), coverage off as in
    // `npm test`; processinfo writes its record under the scratch folder, not into this checkout's .tap.
    const processinfo = import.meta.resolve('@tapjs/processinfo/import');
    const ran = await runProcess(t, '/usr/bin/env', [
      '-u',
      'NODE_OPTIONS',
      `_TAPJS_PROCESSINFO_CWD_=${dir}`,
      '_TAPJS_PROCESSINFO_COVERAGE_=0',
      'TAP_TYPE_STRIP_ONLY=1',
      process.execPath,
      '--enable-source-maps',
      `--import=${processinfo}`,
      `--import=${REGISTER}`,
      file,
    ]);
    t.equal(ran.code, 1, 'the failed assertion fails the file');
    t.match(ran.stdout, `not ok 1 - ${token}`);
    t.match(ran.stdout, `fileName: ${file}\n    lineNumber: 5\n`, 'at the .ts file and line 5 (line 3 of the code)');
    t.match(ran.stdout, `${file}:5:3`, 'so does the stack');
    t.match(ran.stdout, 'maps: {"tap":false,"file":true}', "tap's module without its map, the test file with its own");
    t.equal((await readdir(path.join(dir, '.tap', 'processinfo'))).length, 1, "processinfo's record, in the folder");

    // Alone, as docs/development.md runs one file (no --enable-source-maps): register.mjs turns the maps on.
    const alone = await runProcess(t, '/usr/bin/env', [
      '-u',
      'NODE_OPTIONS',
      process.execPath,
      '--import',
      REGISTER,
      file,
    ]);
    t.equal(alone.code, 1);
    t.match(alone.stdout, `fileName: ${file}\n    lineNumber: 5\n`, 'run alone, the same .ts line');
  },
);

t.test('a test process resolves through this loader, not through ts-node', async (t) => {
  // .taprc leaves tap's @tapjs/typescript plugin out, and its test-env TAP_TYPE_STRIP_ONLY=1 makes the plugin's
  // --import load nothing in the one run that rebuilds tap without it (ts-node cost about 0.9 CPU s a process). A
  // resolve that fails names every resolve hook of the chain in its stack.
  const name = 'nfv-no-such-package';
  const stack = String(((await import(name).catch((e: unknown) => e)) as Error).stack);
  t.match(stack, /test\/loader\/hooks\.mjs/, 'resolved through test/loader/hooks.mjs');
  t.notMatch(stack, /ts-node/, 'no ts-node hook in the chain');
});

t.test("tap's runtime is one bundled module, built again when one of its files changes", async (t) => {
  const bundle = path.join(ROOT, '.tap', 'tap-bundle', 'node_modules', '@tapjs', 'bundle', 'tap.mjs');
  t.equal(import.meta.resolve('tap'), pathToFileURL(bundle).href, 'this test process imported tap from the bundle');
  const inputsFile = `${bundle}.inputs.json`;
  const built = JSON.parse(await readFile(inputsFile, 'utf8')) as { inputs: [string, number, number][] };
  const core = built.inputs.find(([file]) => file.endsWith('/@tapjs/core/dist/esm/index.js'));
  t.ok(core, "tap's core is one of its inputs, with its size and time");
  // The core's recorded size off by one, as if npm had installed another version.
  const [, size] = core!;
  core![1] = size + 1;
  const before = await stat(bundle);
  await writeFile(inputsFile, JSON.stringify(built));
  const dir = await scratch(t);
  const token = `loader-test-${path.basename(dir)}`;
  t.teardown(() => removeEntries(token));
  const file = path.join(dir, 'uses-tap.test.ts');
  await writeFile(file, `import t from 'tap';\nt.pass('${token}');\n`);
  const ran = await run(t, file);
  t.equal(ran.code, 0, ran.stderr);
  t.match(ran.stdout, `ok 1 - ${token}`);
  const rebuilt = JSON.parse(await readFile(inputsFile, 'utf8')) as typeof built;
  t.equal(rebuilt.inputs.find(([f]) => f === core![0])?.[1], size, "the core's true size recorded again");
  // Its time, not its inode: the other test processes of the run may rebuild it too once the inputs are off, and a
  // second rebuild's file can take the inode the first one freed.
  t.ok((await stat(bundle)).mtimeMs > before.mtimeMs, 'the bundle written anew');
});
