/** npm run man: writes the per-group manual pages generated from the command table into man/. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildProgram } from '../cli/main.js';
import { manPages } from '../cli/manpages.js';
import { REPO } from './reference.js';

const program = await buildProgram();
for (const [file, text] of manPages(program, program.version() ?? ''))
  writeFileSync(path.join(REPO, 'man', file), text);
process.stdout.write(`wrote ${manPages(program, program.version() ?? '').size} pages to man/\n`);
process.exit(0);
