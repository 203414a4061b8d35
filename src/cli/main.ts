/**
 * The nfv command line: a thin adapter that turns argv into requests on the operation table.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { NfvError, EXIT, exitCodeFor } from '../model/errors.js';
import { completionCommand } from './commands/completion.js';
import { addExamples } from './examples.js';
import { dropEarlyInterrupt, interruptSignal } from './interrupt.js';
import { addGlobalOptions, state } from './options.js';
import { badRequest } from '../model/errors.js';
import { messages, sayError } from './output.js';
import { shippedPath } from './files.js';

const VERSION = (JSON.parse(readFileSync(shippedPath('package.json'), 'utf8')) as { version: string }).version;

/**
 * The commands in their help's order, each with its module, imported only when needed: a command line that names one
 * loads that one alone (the CLI's start: `nfv --version` loaded every command's module and what it imports).
 */
const COMMANDS: [name: string, load: () => Promise<Command>][] = [
  ['init', async () => (await import('./commands/init.js')).initCommand],
  ['db', async () => (await import('./commands/db.js')).dbCommand],
  ['simulate', async () => (await import('./commands/simulate.js')).simulateCommand],
  ['simulations', async () => (await import('./commands/simulate.js')).simulationsCommand],
  ['emulate', async () => (await import('./commands/emulate.js')).emulateCommand],
  ['graphs', async () => (await import('./commands/graphs.js')).graphsCommand],
  ['nodes', async () => (await import('./commands/graphs.js')).nodesCommand],
  ['neighbours', async () => (await import('./commands/graphs.js')).neighboursCommand],
  ['configuration', async () => (await import('./commands/graphs.js')).configurationCommand],
  ['constraints', async () => (await import('./commands/graphs.js')).constraintsCommand],
  ['requirements', async () => (await import('./commands/requirements.js')).requirementsCommand],
  ['properties', async () => (await import('./commands/requirements.js')).propertiesCommand],
  ['substrates', async () => (await import('./commands/substrates.js')).substratesCommand],
  ['fwd', async () => (await import('./commands/fwd.js')).fwdCommand],
  ['deploy', async () => (await import('./commands/fwd.js')).deployCommand],
  ['firewall', async () => (await import('./commands/firewall.js')).firewallCommand],
  ['import', async () => (await import('./commands/import.js')).importCommandGroup],
  ['generate-files', async () => (await import('./commands/fwd.js')).generateFilesCommand],
  ['inventory', async () => (await import('./commands/inventory.js')).inventoryCommand],
  ['request', async () => (await import('./commands/request.js')).requestCommand],
  ['serve', async () => (await import('./commands/serve.js')).serveCommand],
  ['worker', async () => (await import('./commands/serve.js')).workerCommand],
];

/**
 * The commands a command line needs: the one it names after global options only, or none for `--version` (which
 * commander answers before any command); else (help, completion, a word that is no command, an option this cannot
 * read) all of them.
 */
function neededBy(program: Command, argv: string[]): typeof COMMANDS {
  for (let k = 2; k < argv.length; k++) {
    const word = argv[k]!;
    if (!word.startsWith('-')) {
      const named = COMMANDS.filter(([name]) => name === word);
      return named.length ? named : COMMANDS;
    }
    const option = program.options.find((o) => o.long === word || o.short === word);
    if (!option) return COMMANDS;
    if (option.long === '--version') return [];
    if (option.required || option.optional) k++;
  }
  return COMMANDS;
}

/** The program for a command line (argv as process.argv: node, script, words); without one, every command. */
export async function buildProgram(argv: string[] = []): Promise<Command> {
  const program = addGlobalOptions(new Command('nfv'))
    .description('Network workspace, firewall allocation and verification, inventory queries')
    .version(VERSION)
    .showHelpAfterError('(run with --help for usage)');
  const needed = argv.length ? neededBy(program, argv) : COMMANDS;
  for (const cmd of await Promise.all(needed.map(([, load]) => load()))) program.addCommand(cmd);
  program
    .helpCommand(false)
    .addCommand(helpCommand(program))
    .addCommand(completionCommand(() => program));
  addExamples(program);
  program.hook('preAction', (_program, action) => {
    messages.quiet = Boolean(action.optsWithGlobals<{ quiet?: boolean }>().quiet);
    // Ctrl-C is caught from the start of a command, not from its first request: before, a Ctrl-C while it loaded or
    // read its input met only proper-lockfile's signal-exit, which kills the process with the signal, silently.
    // serve and worker stop on SIGINT their own way.
    if (action.name() !== 'serve' && action.name() !== 'worker') interruptSignal();
    dropEarlyInterrupt();
  });
  // One exit path: commander must throw instead of exiting, on every (sub)command; one prefix for every error.
  const overrideAll = (c: Command) => {
    c.exitOverride();
    c.configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, 'nfv: ')) });
    c.commands.forEach(overrideAll);
  };
  overrideAll(program);
  return program;
}

/** `nfv help [COMMAND...]`: the help of a command, or exit 2 naming a command that does not exist. */
function helpCommand(program: Command): Command {
  return new Command('help')
    .description('display help for a command')
    .argument('[command...]', 'the command, e.g. graphs create')
    .action((words: string[]) => {
      let cmd = program;
      for (const word of words) {
        const next = cmd.commands.find((c) => c.name() === word || c.aliases().includes(word));
        if (!next) throw badRequest(`help: there is no command '${words.join(' ')}' (nfv --help lists them)`);
        cmd = next;
      }
      cmd.outputHelp();
    });
}

/** Resolves once everything written to a stream so far has been handed to the operating system. */
function drained(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.destroyed || !stream.writable) return Promise.resolve();
  return new Promise((resolve) => stream.write('', () => resolve()));
}

/**
 * The process entry point: runs the CLI, waits until stdout and stderr have drained (a 5 MB answer through a pipe
 * arrives whole), then exits explicitly, since z3-solver keeps emscripten threads alive. A reader that closes the
 * pipe early (`| head`) ends the process quietly.
 */
export async function main(argv: string[]): Promise<never> {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    });
  }
  const code = await run(argv);
  await drained(process.stdout);
  await drained(process.stderr);
  process.exit(code);
}

/** Runs the CLI and returns its exit code. */
export async function run(argv: string[]): Promise<number> {
  state.exitCode = EXIT.ok;
  try {
    await (await buildProgram(argv)).parseAsync(argv);
    return state.exitCode;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help')
        return EXIT.ok;
      // A group called without a subcommand shows its help and is a usage error.
      return EXIT.invalid;
    }
    if (e instanceof NfvError) {
      // Said in words; the exit code gives its kind.
      sayError(e.message);
      return exitCodeFor(e.status);
    }
    if ((e as Error)?.name === 'ExitPromptError') return 130;
    sayError(`internal error: ${(e as Error)?.message ?? String(e)}`);
    return EXIT.internal;
  }
}
