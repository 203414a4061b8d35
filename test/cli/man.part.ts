/** The manual pages: nfv.1 and one per command group, generated from the command table and committed as generated. */
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { buildProgram } from '../../src/cli/main.js';
import { manPages } from '../../src/cli/manpages.js';
import { ROOT } from '../helpers.js';

t.test('the committed group pages are what the command table generates (npm run man)', async (t) => {
  const program = await buildProgram();
  const pages = manPages(program, program.version() ?? '');
  const committed = (await readdir(path.join(ROOT, 'man'))).filter((f) => f.endsWith('.1')).sort();
  t.same(committed, [...pages.keys()].sort(), 'nfv.1 and a page per group, no stale page');
  for (const [file, text] of pages)
    t.equal(await readFile(path.join(ROOT, 'man', file), 'utf8'), text, `${file} is up to date`);
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { man: string[] };
  t.same(pkg.man.sort(), committed.map((f) => `man/${f}`).sort(), 'package.json installs them all');
});

t.test('every page has EXIT STATUS and EXAMPLES', async (t) => {
  for (const file of (await readdir(path.join(ROOT, 'man'))).filter((f) => f.endsWith('.1'))) {
    const text = await readFile(path.join(ROOT, 'man', file), 'utf8');
    t.match(text, /\n\.SH EXIT STATUS\n/, `${file}: EXIT STATUS`);
    t.match(text, /\n\.SH EXAMPLES\n/, `${file}: EXAMPLES`);
  }
});
