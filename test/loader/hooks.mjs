// TypeScript for the test processes: Node module hooks that transpile each .ts file with TypeScript's own
// transpileModule, the call tap's ts-node plugin makes (transpile only: tsc type-checks in the build), so the code
// and the source maps coverage is counted through are the ones it counted before. What makes it cheap is a cache:
// ts-node loaded the compiler and transpiled every file again in each of the suite's ~120 processes (about 5 s of
// CPU each); here a file is transpiled once, kept under .tap/ts-cache by a hash of its text and the compiler's
// version and options, and read back by every later process, which then never loads the compiler at all.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CACHE = path.join(ROOT, '.tap', 'ts-cache');
const require = createRequire(import.meta.url);
const TS_VERSION = require('typescript/package.json').version;
// As tsconfig.json builds src (target ES2022; ES modules, as NodeNext emits them for this "type": "module"
// package), with a source map: Node's stacks (`--enable-source-maps`), tap's failure lines (`findSourceMap`) and
// coverage's ranges go through it.
const OPTIONS = { target: 'ES2022', module: 'ESNext', sourceMap: true };
const MAP_COMMENT = /\/\/# sourceMappingURL=\S+\s*$/;

/** A .ts file of this checkout outside node_modules (a URL may carry a query, as tap's mocks add). */
const ours = (url) => {
  if (!url.startsWith('file:')) return undefined;
  const file = fileURLToPath(url.split('?')[0]);
  return file.endsWith('.ts') && !file.includes(`${path.sep}node_modules${path.sep}`) ? file : undefined;
};

// The sources import each other as `./x.js` (NodeNext), where only x.ts exists. A worker thread's entry
// (`new Worker(new URL('./solve-worker.js', import.meta.url))`, the CLI's solver thread) comes as a file URL with
// no .ts parent: tap's TypeScript import resolved it under tap, and without it (`node --import` of this loader)
// every simulation through the CLI or the operations crashed twice and answered 70. Looked up before Node's resolve
// (an x.js that exists still wins): letting that resolve fail first cost an exception per import.
export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'tap') return { url: tapBundle(), shortCircuit: true };
  const local =
    /^\.{0,2}\//.test(specifier) && context.parentURL !== undefined && ours(context.parentURL) !== undefined;
  if (specifier.endsWith('.js') && (local || specifier.startsWith('file:'))) {
    const js = new URL(specifier, context.parentURL);
    const ts = new URL(`${js.pathname.slice(0, -3)}.ts${js.search}`, js);
    if (ours(ts.href) !== undefined && !existsSync(js) && existsSync(ts)) return await nextResolve(ts.href, context);
  }
  // Awaited, so that a failed resolve names this hook in its stack also where an async hook runs after this one
  // (the run that rebuilds tap still carries @tapjs/mock's): hooks.test.ts reads the chain from that stack.
  return await nextResolve(specifier, context);
}

// tap's runtime as one module. `import t from 'tap'` loaded about 110 ES modules (tap, @tapjs/core, its plugins,
// tcompare, diff, yaml, ...), each a resolve and a load across the hooks thread (tap's processinfo registers one
// in every test process, ours or not): about 0.4 CPU s of a test process's start, a trivial file's 1.0. Bundled
// once by esbuild, and again when any of its input files changes (npm ci, `tap build`). In a node_modules folder:
// tap leaves the frames of node_modules/@tapjs/ out of a failure's location and stack (@tapjs/stack). processinfo
// and signal-exit stay outside: their --import already loaded them, and each keeps its state in one instance.
// The bundle's folder: NFV_TAP_BUNDLE_DIR when set, else .tap/tap-bundle; tap's packages find their externals and
// optional packages from there (import.meta.url), so this checkout's node_modules must be found above it.
// test/loader/hooks.test.ts checks a rebuild in a folder of its own: putting the suite's bundle off made the test
// processes starting meanwhile rebuild it too.
export const TAP_BUNDLE_DIR = process.env.NFV_TAP_BUNDLE_DIR || path.join(ROOT, '.tap', 'tap-bundle');
const BUNDLE_ARGS = [
  '--bundle',
  '--format=esm',
  '--platform=node',
  '--target=node20',
  '--external:@tapjs/processinfo',
  '--external:signal-exit',
  '--log-level=warning',
  // for yaml's CommonJS, which requires Node's modules
  "--banner:js=import { createRequire as tapRequire } from 'node:module'; const require = tapRequire(import.meta.url);",
];
// tap's entry as Node's import resolves it from this checkout (esbuild reads it from stdin)
const BUNDLE_ENTRY = "export * from 'tap';\nexport { default } from 'tap';\n";
let bundleUrl;

/** Each input file's size and modification time, the bundle's key beside esbuild's version and arguments. */
const stamps = (files) =>
  files.map((file) => {
    const { size, mtimeMs } = statSync(file);
    return [file, size, mtimeMs];
  });

/** The file URL of the suite's bundle (tapBundleIn of TAP_BUNDLE_DIR, once per thread). */
export function tapBundle() {
  bundleUrl ??= pathToFileURL(tapBundleIn(TAP_BUNDLE_DIR)).href;
  return bundleUrl;
}

/** The bundle's file in `folder`, built first when missing or when an input changed; its inputs file beside it. */
export function tapBundleIn(folder) {
  const bundle = path.join(folder, 'node_modules', '@tapjs', 'bundle', 'tap.mjs');
  const inputsFile = `${bundle}.inputs.json`;
  const key = [require('esbuild/package.json').version, ...BUNDLE_ARGS, BUNDLE_ENTRY].join('\0');
  let fresh = false;
  try {
    const built = JSON.parse(readFileSync(inputsFile, 'utf8'));
    fresh =
      built.key === key && JSON.stringify(stamps(built.inputs.map(([file]) => file))) === JSON.stringify(built.inputs);
  } catch {
    // no bundle yet, or an input gone: built below
  }
  if (!fresh) {
    mkdirSync(path.dirname(bundle), { recursive: true });
    const aside = `${bundle}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    const esbuild = path.join(ROOT, 'node_modules', '.bin', 'esbuild');
    execFileSync(esbuild, [...BUNDLE_ARGS, `--outfile=${aside}`, `--metafile=${aside}.json`], {
      cwd: ROOT,
      input: BUNDLE_ENTRY,
      stdio: ['pipe', 'ignore', 'inherit'],
    });
    const { inputs } = JSON.parse(readFileSync(`${aside}.json`, 'utf8'));
    const files = Object.keys(inputs).filter((f) => f !== '<stdin>');
    writeFileSync(`${aside}.json`, JSON.stringify({ key, inputs: stamps(files.map((f) => path.resolve(ROOT, f))) }));
    // The bundle first: a process that reads the new inputs file then finds the new bundle.
    renameSync(aside, bundle);
    renameSync(`${aside}.json`, inputsFile);
  }
  return bundle;
}

let ts;
let compilerOptions;

function transpile(file, source) {
  if (ts === undefined) {
    ts = require('typescript');
    compilerOptions = ts.convertCompilerOptionsFromJson(OPTIONS, ROOT).options;
  }
  const out = ts.transpileModule(source, { fileName: file, compilerOptions, reportDiagnostics: true });
  // Syntax errors, as ts-node reported them (tsc checks src in the build, but not the tests).
  const errors = out.diagnostics.filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length) {
    const host = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' };
    throw new SyntaxError(ts.formatDiagnostics(errors, host));
  }
  // The map names the file by its full path, as ts-node's did.
  const map = { ...JSON.parse(out.sourceMapText), file, sources: [file] };
  delete map.sourceRoot;
  return { code: out.outputText.replace(MAP_COMMENT, ''), map: JSON.stringify(map) };
}

/** Writes aside and renames: two test processes transpiling the same file both write whole files. */
function writeWhole(file, text) {
  const aside = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  writeFileSync(aside, text);
  renameSync(aside, file);
}

/** The JavaScript of one of our .ts files: from the cache, else transpiled and kept there. */
export function transpiled(file) {
  const source = readFileSync(file, 'utf8');
  const key = createHash('sha256')
    .update(`${TS_VERSION}\0${JSON.stringify(OPTIONS)}\0${file}\0${source}`)
    .digest('hex');
  const cached = path.join(CACHE, `${key}.js`);
  try {
    return readFileSync(cached, 'utf8');
  } catch {
    const { code, map } = transpile(file, source);
    mkdirSync(CACHE, { recursive: true });
    // The map in a file of its own, not inline (ts-node's way, with the source inside): a module's text was then
    // three times its code, and every process decoded it, scanned it and sent it across the hooks thread. Written
    // first, so a cached .js always has its map; named by path, as Node reads no file: URL there.
    writeWhole(`${cached}.map`, map);
    const text = `${code}//# sourceMappingURL=${pathToFileURL(`${cached}.map`).pathname}\n`;
    writeWhole(cached, text);
    return text;
  }
}

export async function load(url, context, nextLoad) {
  const file = ours(url);
  if (file !== undefined) return { format: 'module', source: transpiled(file), shortCircuit: true };
  // A package's ES module (tap's and its dependencies' are most of a test process's modules) is given to Node
  // without its sourceMappingURL: the map only turns frames inside the package from its .js to its sources, and tap
  // leaves its own frames out of what it reports. With it, Node (`--enable-source-maps`) read and parsed every such
  // map in every test process, and tap's processinfo (its load hook, after this one) read the module again, split
  // it into lines and parsed the map once more, with coverage off too. A CommonJS module Node reads itself.
  if (context.format === 'module' && url.startsWith('file:') && url.includes('/node_modules/')) {
    const source = readFileSync(new URL(url), 'utf8').replace(MAP_COMMENT, '');
    return nextLoad(url, { ...context, source });
  }
  return nextLoad(url, context);
}
