/**
 * test/loader/hooks.mjs, the TypeScript every test process runs through: a .ts file runs with its types stripped,
 * `./x.js` finds x.ts (an x.js still first), a stack names the .ts line (the source map beside the cached code), a
 * syntax error names the file, and the transpiled text is cached once per file text in .tap/ts-cache and read back,
 * not written again; as tap starts a test process, a failure names the .ts file and line, and packages' modules
 * come without their source maps; tap is one bundled module, built again when one of its files changes.
 */
import { copyFile, mkdir, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { ROOT, runProcess, scratch } from '../helpers.js';
import { TAP_BUNDLE_DIR, tapBundleIn, transpiled } from './hooks.mjs';

const CACHE = path.join(ROOT, '.tap', 'ts-cache');
const REGISTER = path.join(ROOT, 'test', 'loader', 'register.mjs');

/** node with the loader only (no tap hooks), as `node --import ./test/loader/register.mjs FILE` runs one file. */
const run = (t: Tap.Test, file: string, env: Record<string, string> = {}) =>
  runProcess(t, '/usr/bin/env', [
    '-u',
    'NODE_OPTIONS',
    ...Object.entries(env).map(([name, value]) => `${name}=${value}`),
    process.execPath,
    '--enable-source-maps',
    '--import',
    REGISTER,
    file,
  ]);

/**
 * Writes `files` and transpiles them into the cache here, for the tests where a child's transpiling is not the
 * point: a child that meets a file not cached loads TypeScript (about 0.7 CPU s); this process loads it once.
 */
async function cached(files: Record<string, string>) {
  for (const [file, text] of Object.entries(files)) {
    await writeFile(file, text);
    transpiled(file);
  }
}

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
  await cached({
    [thrower]: `type N = number;\nconst n: N = 1;\nconst tag = '${token}';\nthrow new Error(tag + n);\n`,
  });
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
  const sub = path.join(dir, 'sub');
  await mkdir(sub);
  const main = path.join(sub, 'main.ts');
  await cached({
    [path.join(dir, 'd.ts')]: `export const which: string = 'd.ts'; // ${token}\n`,
    [main]:
      `import { which as c } from '../c.js';\nimport { which as d } from '${path.join(dir, 'd.js')}';\n` +
      `console.log(c, d, '${token}');\n`,
  });
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
    await cached({
      [file]: [
        `import { findSourceMap } from 'node:module';`,
        `import t from '${tap}';`,
        `type N = number;`,
        `const n: N = 1;`,
        `t.equal(n, 2, '${token}');`,
        `const maps = { tap: findSourceMap('${tap}') !== undefined, file: !!findSourceMap(import.meta.url) };`,
        `console.log('maps:', JSON.stringify(maps));`,
        '',
      ].join('\n'),
    });
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
  const shared = path.join(TAP_BUNDLE_DIR, 'node_modules', '@tapjs', 'bundle', 'tap.mjs');
  t.equal(import.meta.resolve('tap'), pathToFileURL(shared).href, 'this test process imported tap from the bundle');
  const sharedBefore = { stat: await stat(shared), inputs: await readFile(`${shared}.inputs.json`, 'utf8') };
  // A bundle of its own, in NFV_TAP_BUNDLE_DIR: the suite's bundle put off would be rebuilt by every test process
  // starting meanwhile. A copy of the suite's, which is fresh: not built again.
  const dir = await scratch(t);
  const folder = path.join(dir, 'tap-bundle');
  // tap's packages find their externals and optional packages from the bundle's place, so from this link above it.
  await symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  const bundle = path.join(folder, 'node_modules', '@tapjs', 'bundle', 'tap.mjs');
  const inputsFile = `${bundle}.inputs.json`;
  await mkdir(path.dirname(bundle), { recursive: true });
  await Promise.all([copyFile(shared, bundle), copyFile(`${shared}.inputs.json`, inputsFile)]);
  const copied = await stat(bundle);
  t.equal(tapBundleIn(folder), bundle);
  t.equal((await stat(bundle)).mtimeMs, copied.mtimeMs, 'a fresh bundle is not built again');

  type Built = { inputs: [string, number, number][] };
  const built = JSON.parse(await readFile(inputsFile, 'utf8')) as Built;
  const core = built.inputs.findIndex(([file]) => file.endsWith('/@tapjs/core/dist/esm/index.js'));
  t.ok(core >= 0, "tap's core is one of its inputs, with its size and time");
  const [coreFile, size, mtimeMs] = built.inputs[core]!;
  /** Puts the core's recorded size or time off; the bundle is built again, both recorded as they are. */
  const putOff = async (what: string, stamp: [string, number, number], rebuild: () => Promise<void>) => {
    const before = await stat(bundle);
    const off = structuredClone(built);
    off.inputs[core] = stamp;
    await writeFile(inputsFile, JSON.stringify(off));
    await rebuild();
    const rebuilt = JSON.parse(await readFile(inputsFile, 'utf8')) as Built;
    t.same(
      rebuilt.inputs.find(([f]) => f === coreFile),
      [coreFile, size, mtimeMs],
      `${what}: recorded again`,
    );
    // Its time, not its inode: a rebuild's file can take the inode the copy freed.
    t.ok((await stat(bundle)).mtimeMs > before.mtimeMs, `${what}: the bundle written anew`);
  };
  await putOff("the core's time", [coreFile, size, mtimeMs - 1000], async () => void tapBundleIn(folder));
  // As a test process finds it, as if npm had installed another version: the size off by one.
  const token = `loader-test-${path.basename(dir)}`;
  t.teardown(() => removeEntries(token));
  const file = path.join(dir, 'uses-tap.test.ts');
  await cached({ [file]: `import t from 'tap';\nt.pass('${token}');\nconsole.log(import.meta.resolve('tap'));\n` });
  await putOff("the core's size, in a test process", [coreFile, size + 1, mtimeMs], async () => {
    const ran = await run(t, file, { NFV_TAP_BUNDLE_DIR: folder });
    t.equal(ran.code, 0, ran.stderr);
    t.match(ran.stdout, `ok 1 - ${token}`);
    t.match(ran.stdout, `\n${pathToFileURL(bundle).href}\n`, 'tap imported from the folder NFV_TAP_BUNDLE_DIR names');
  });
  const sharedAfter = { stat: await stat(shared), inputs: await readFile(`${shared}.inputs.json`, 'utf8') };
  t.equal(sharedAfter.stat.mtimeMs, sharedBefore.stat.mtimeMs, "the suite's bundle is left as it was");
  t.equal(sharedAfter.inputs, sharedBefore.inputs, 'and its inputs file too');
});
