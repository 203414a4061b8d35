// tap starts each test file with `--import` of this file (.taprc `node-arg`): it puts the TypeScript hooks of
// hooks.mjs in front of Node's loader, in the test process and in its worker threads (they inherit execArgv).
import { register } from 'node:module';

// A failure's file and line come through the source maps (Node's stacks, tap's `findSourceMap`), which Node keeps
// only when they are on: tap turns them on, `node --import ./test/loader/register.mjs FILE` alone did not.
process.setSourceMapsEnabled(true);
register('./hooks.mjs', import.meta.url);
