// Before the suite (`npm test`, `npm run coverage`): every .ts file of src/ and test/ transpiled into .tap/ts-cache,
// half in this thread and half in a worker. On a clean clone the cache is empty, and every test process met at least
// one file not cached yet (its own test file) and loaded TypeScript to transpile it: about 0.6-0.9 s of CPU more for
// a trivial file, 6 s for test/cli/reading (its ~100 sources). Here TypeScript is loaded twice for the whole run,
// and not at all when every file is cached already (0.4 s).
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, workerData } from 'node:worker_threads';
import { tapBundle, transpiled } from './hooks.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const part = isMainThread ? 0 : workerData;
const other = isMainThread ? new Worker(new URL(import.meta.url), { workerData: 1 }) : undefined;
const files = ['src', 'test'].flatMap((dir) =>
  readdirSync(path.join(ROOT, dir), { recursive: true })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => path.join(ROOT, dir, f)),
);
files.forEach((file, k) => {
  if (k % 2 !== part) return;
  try {
    transpiled(file);
  } catch {
    // A file TypeScript refuses is left to the test process that imports it, which reports it.
  }
});
if (other) await new Promise((resolve, reject) => other.on('exit', resolve).on('error', reject));

// tap builds its Test class from .taprc's plugin list; after `npm ci` it holds tap's default plugins. The run that
// rebuilds it (tap does so itself) still starts every test process with the old class's hooks (@tapjs/mock's among
// them: about 0.2 CPU s a process, and a loader chain the tests do not expect), so it is rebuilt here first.
if (isMainThread) {
  await import('@tapjs/core'); // @tapjs/test's module needs core's loaded first
  const { signature } = await import('@tapjs/test');
  const { TapConfig } = await import('@tapjs/config');
  if (signature !== (await TapConfig.load()).pluginSignature) {
    execFileSync(path.join(ROOT, 'node_modules', '.bin', 'tap'), ['build'], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  // tap's runtime bundled from the class just built, before four test processes at once find it missing
  tapBundle();
}
