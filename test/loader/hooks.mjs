// TypeScript for the test processes: Node module hooks that transpile each .ts file with TypeScript's own
// transpileModule, the call tap's ts-node plugin makes (transpile only: tsc type-checks in the build), so the code
// and the source maps coverage is counted through are the ones it counted before. What makes it cheap is a cache:
// ts-node loaded the compiler and transpiled every file again in each of the suite's ~120 processes (about 5 s of
// CPU each); here a file is transpiled once, kept under .tap/ts-cache by a hash of its text and the compiler's
// version and options, and read back by every later process, which then never loads the compiler at all.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CACHE = path.join(ROOT, '.tap', 'ts-cache');
const require = createRequire(import.meta.url);
const TS_VERSION = require('typescript/package.json').version;
// As tsconfig.json builds src (target ES2022; ES modules, as NodeNext emits them for this "type": "module"
// package), with what ts-node adds: a source map holding the source, written inline below.
const OPTIONS = { target: 'ES2022', module: 'ESNext', sourceMap: true, inlineSources: true };

/** A .ts file of this checkout outside node_modules (a URL may carry a query, as tap's mocks add). */
const ours = (url) => {
  if (!url.startsWith('file:')) return undefined;
  const file = fileURLToPath(url.split('?')[0]);
  return file.endsWith('.ts') && !file.includes(`${path.sep}node_modules${path.sep}`) ? file : undefined;
};

// The sources import each other as `./x.js` (NodeNext), where only x.ts exists. A worker thread's entry
// (`new Worker(new URL('./solve-worker.js', import.meta.url))`, the CLI's solver thread) comes as a file URL with
// no .ts parent: tap's TypeScript import resolved it under tap, and without it (`node --import` of this loader)
// every simulation through the CLI or the operations crashed twice and answered 70.
export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (error) {
    const fromTs = context.parentURL !== undefined && ours(context.parentURL) !== undefined;
    const entry = specifier.startsWith('file:') && ours(`${specifier.slice(0, -3)}.ts`) !== undefined;
    if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !specifier.endsWith('.js') || !(fromTs || entry)) throw error;
    return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
  }
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
  // ts-node's way: the map names the file by its full path and comes inline instead of the .js.map reference.
  const map = { ...JSON.parse(out.sourceMapText), file, sources: [file] };
  delete map.sourceRoot;
  const code = out.outputText.replace(/\/\/# sourceMappingURL=\S+\s*$/, '');
  const inline = Buffer.from(JSON.stringify(map)).toString('base64');
  return `${code}//# sourceMappingURL=data:application/json;charset=utf-8;base64,${inline}`;
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
    const code = transpile(file, source);
    // Written aside and renamed: two test processes transpiling the same file both write whole files.
    mkdirSync(CACHE, { recursive: true });
    const aside = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    writeFileSync(aside, code);
    renameSync(aside, cached);
    return code;
  }
}

export async function load(url, context, nextLoad) {
  const file = ours(url);
  if (file === undefined) return nextLoad(url, context);
  return { format: 'module', source: transpiled(file), shortCircuit: true };
}
