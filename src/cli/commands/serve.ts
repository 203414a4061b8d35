import { Command, InvalidArgumentError } from 'commander';
import { stopSolverWorkers, useSolverWorkers } from '../../engine/threads/pool.js';
import { MAX_QUEUED_SOLVES } from '../../model/limits.js';
import { workspaceOf } from '../options.js';
import { badRequest } from '../../model/errors.js';
import { say } from '../output.js';

const integer =
  (min: number, max: number, what: string) =>
  (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max) throw new InvalidArgumentError(`must be ${what} ${min}-${max}`);
    return n;
  };

interface ServeOptions {
  host: string;
  port: number;
  solvers: number;
  queue: number;
  token?: string;
  insecure?: boolean;
  log?: boolean;
}

export const serveCommand = new Command('serve')
  .description('serve the operation table over HTTP')
  .option('--host <host>', 'address to bind', '127.0.0.1')
  .option('--port <port>', 'port to listen on (0: any free port)', integer(0, 65535, 'a port number'), 8085)
  .option('--solvers <n>', 'simulations solved at once, each in its own worker thread', integer(1, 16, 'a count'), 2)
  .option(
    '--queue <n>',
    'simulations that may wait for a solver; more get 503',
    integer(0, 1000, 'a count'),
    MAX_QUEUED_SOLVES,
  )
  .option('--token <token>', 'require Authorization: Bearer TOKEN on every request (default $NFV_TOKEN)')
  .option('--insecure', 'allow a non-loopback --host without a token (prints a warning)')
  .option('--log', 'write one access-log line per request to stderr')
  .action(async (opts: ServeOptions, self: Command) => {
    const { isLoopback, listen } = await import('../../http/server.js');
    const token = opts.token ?? (process.env.NFV_TOKEN || undefined);
    if (!isLoopback(opts.host) && token === undefined && !opts.insecure) {
      throw badRequest(
        `--host ${opts.host} is reachable from other machines: give --token (or NFV_TOKEN), or --insecure`,
      );
    }
    useSolverWorkers(opts.solvers, opts.queue);
    let listening;
    try {
      listening = await listen(workspaceOf(self), opts.host, opts.port, { token, log: opts.log ? say : undefined });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE') throw badRequest(`--port ${opts.port}: the port is already in use on ${opts.host}`);
      if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')
        throw badRequest(`--host ${opts.host}: not an address of this machine`);
      if (code === 'EACCES')
        throw badRequest(`--port ${opts.port}: permission denied (ports below 1024 need privileges)`);
      throw e;
    }
    const { server, url } = listening;
    say(`listening on ${url}`);
    if (!isLoopback(opts.host) && token === undefined) {
      say(
        `warning: serving ${opts.host} without authentication (--insecure): ` +
          'anyone who reaches it can change the workspace',
      );
    }
    // Serve until told to stop; then close and leave (solver threads must not keep the process alive).
    await new Promise<void>((resolve) => {
      const stop = () => {
        server.closeAllConnections();
        server.close(() => void stopSolverWorkers().then(resolve));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
  });
