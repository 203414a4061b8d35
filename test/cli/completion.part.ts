/** nfv completion: scripts generated from the command table; the bash one loaded in bash and asked for completions. */
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { scratch } from '../helpers.js';
import { nfv } from './in-process.js';

t.test('bash completes commands, subcommands, options and option values', async (t) => {
  const script = await nfv(['completion', 'bash']);
  t.equal(script.code, 0);
  const file = path.join(await scratch(t), 'nfv.bash');
  await writeFile(file, script.stdout);
  const complete = (...words: string[]) => {
    const r = spawnSync(
      'bash',
      ['-c', `source "${file}"; COMP_WORDS=(nfv "$@"); COMP_CWORD=$#; _nfv; echo "\${COMPREPLY[*]}"`, '_', ...words],
      { encoding: 'utf8' },
    );
    t.equal(r.stderr, '', `no bash error for ${words.join(' ')}`);
    return r.stdout.trim();
  };
  t.equal(complete('gra'), 'graphs');
  t.equal(complete('graphs', ''), 'list create get update delete delete-all draw');
  t.equal(complete('simulations', 'd'), 'diff draw delete delete-all');
  t.equal(complete('fwd', 'nodes', 'l'), 'list');
  t.equal(complete('--format', ''), 'xml json table');
  t.equal(complete('graphs', 'list', '--fo'), '--format');
  t.equal(complete('-w', '/tmp', 'inv'), 'inventory');
  t.equal(
    complete('inventory', 'ingest', '--'),
    complete('--')
      .split(' ')
      .filter((o) => o.startsWith('--'))
      .join(' '),
    'global options everywhere',
  );
});

t.test('zsh and fish scripts; an unknown shell is exit 2', async (t) => {
  t.match((await nfv(['completion', 'zsh'])).stdout, /^#compdef nfv\n#.*\nautoload -U \+X bashcompinit/);
  const fish = (await nfv(['completion', 'fish'])).stdout;
  t.match(fish, /complete -c nfv -n '__fish_use_subcommand' -a graphs -d 'graphs of network functions'/);
  t.match(
    fish,
    "complete -c nfv -n '__fish_seen_subcommand_from graphs; " +
      "and not __fish_seen_subcommand_from list create get update delete delete-all draw' -a list",
  );
  t.match(fish, /complete -c nfv -l format -xa 'xml json table'/);
  const bad = await nfv(['completion', 'tcsh']);
  t.equal(bad.code, 2);
  t.equal(bad.stderr, "nfv: completion: shell must be bash, zsh or fish, not 'tcsh'\n");
});
