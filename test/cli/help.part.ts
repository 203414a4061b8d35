/** Every command's --help ends with examples, and each example names a command that exists. */
import t from 'tap';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/main.js';
import { cli } from '../helpers.js';

function all(cmd: Command): Command[] {
  return [cmd, ...cmd.commands.flatMap(all)];
}

t.test("every command's help ends with examples of existing commands", async (t) => {
  const program = await buildProgram();
  const names = new Set(
    all(program).map((c) => {
      const path: string[] = [];
      for (let x: Command | null = c; x; x = x.parent) path.unshift(x.name());
      return path.join(' ');
    }),
  );
  let checked = 0;
  for (const cmd of all(program)) {
    let text = '';
    // Put back after: the subcommands are the CLI's module-level objects, which later in-process runs write through.
    const output = cmd.configureOutput();
    cmd.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
    cmd.outputHelp();
    cmd.configureOutput(output);
    const examples = /\nExamples:\n((?: {2}\$ .+\n)+)\n*$/.exec(text);
    if (!examples) {
      t.fail(`${cmd.name()}: no examples at the end of its help`);
      continue;
    }
    for (const line of examples[1]!
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)) {
      const words = line
        .replace(/^\$ /, '')
        .replace(/^\S+=\S+ /, '')
        .replace(/^cat \S+ \| /, '')
        .replace(/^source <\((.*)\)$/, '$1')
        .split(' ');
      const known = [...Array(words.length).keys()].some((k) => names.has(words.slice(0, k + 1).join(' ')) && k > 0);
      if (!known) t.fail(`${cmd.name()}: example "${line}" names no command`);
    }
    checked++;
  }
  t.ok(checked > 60, `${checked} commands checked`);
});

t.test('--help through the binary ends with the examples', async (t) => {
  const r = await cli(['graphs', 'create', '--help']);
  t.equal(r.code, 0);
  t.match(r.stdout, /\nExamples:\n {2}\$ nfv graphs create -f graphs\.xml\n+$/);
});

t.test('a command line naming a command loads that command alone, the same as in the whole table', async (t) => {
  const whole = await buildProgram();
  const names = whole.commands.map((c) => c.name()).filter((n) => n !== 'help' && n !== 'completion');
  t.ok(names.includes('simulate') && names.includes('inventory'), 'the whole table has the commands');
  for (const name of names) {
    const program = await buildProgram(['node', 'nfv', '--workspace', 'w', '-q', name, '--help']);
    t.same(
      program.commands.map((c) => c.name()),
      [name, 'help', 'completion'],
      `${name}: its own command, then help and completion`,
    );
    t.equal(
      program.commands[0],
      whole.commands.find((c) => c.name() === name),
      `${name}: the same command object`,
    );
  }
  t.same(
    (await buildProgram(['node', 'nfv', '--version'])).commands.map((c) => c.name()),
    ['help', 'completion'],
  );
  for (const words of [['help', 'simulate'], ['-x', 'simulate'], ['simulat'], []])
    t.equal((await buildProgram(['node', 'nfv', ...words])).commands.length, names.length + 2, words.join(' '));
});
