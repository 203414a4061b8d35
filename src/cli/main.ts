/**
 * The nfv command line: a thin adapter that turns argv into requests on the operation table.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { NfvError, EXIT, exitCodeFor } from '../model/errors.js';
import {
  configurationCommand,
  constraintsCommand,
  graphsCommand,
  neighboursCommand,
  nodesCommand,
} from './commands/graphs.js';
import { deployCommand, fwdCommand, generateFilesCommand } from './commands/fwd.js';
import { emulateCommand } from './commands/emulate.js';
import { completionCommand } from './commands/completion.js';
import { firewallCommand } from './commands/firewall.js';
import { importCommandGroup } from './commands/import.js';
import { addExamples } from './examples.js';
import { dbCommand } from './commands/db.js';
import { initCommand } from './commands/init.js';
import { inventoryCommand } from './commands/inventory.js';
import { requestCommand } from './commands/request.js';
import { propertiesCommand, requirementsCommand } from './commands/requirements.js';
import { serveCommand, workerCommand } from './commands/serve.js';
import { simulateCommand, simulationsCommand } from './commands/simulate.js';
import { substratesCommand } from './commands/substrates.js';
import { dropEarlyInterrupt, interruptSignal } from './interrupt.js';
import { addGlobalOptions, state } from './options.js';
import { badRequest } from '../model/errors.js';
import { messages, sayError } from './output.js';
import { shippedPath } from './files.js';

const VERSION = (JSON.parse(readFileSync(shippedPath('package.json'), 'utf8')) as { version: string }).version;

export function buildProgram(): Command {
  const program = addGlobalOptions(new Command('nfv'))
    .description('Network workspace, firewall allocation and verification, inventory queries')
    .version(VERSION)
    .showHelpAfterError('(run with --help for usage)');
  for (const cmd of [
    initCommand,
    dbCommand,
    simulateCommand,
    simulationsCommand,
    emulateCommand,
    graphsCommand,
    nodesCommand,
    neighboursCommand,
    configurationCommand,
    constraintsCommand,
    requirementsCommand,
    propertiesCommand,
    substratesCommand,
    fwdCommand,
    deployCommand,
    firewallCommand,
    importCommandGroup,
    generateFilesCommand,
    inventoryCommand,
    requestCommand,
    serveCommand,
    workerCommand,
  ]) {
    program.addCommand(cmd);
  }
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
    await buildProgram().parseAsync(argv);
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
