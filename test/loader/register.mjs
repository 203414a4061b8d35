// tap starts each test file with `--import` of this file (.taprc `node-arg`): it puts the TypeScript hooks of
// hooks.mjs in front of Node's loader, in the test process and in its worker threads (they inherit execArgv).
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
