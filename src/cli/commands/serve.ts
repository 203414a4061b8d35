import { Command, InvalidArgumentError } from 'commander';
import { solveJob, stopSolverWorkers, useSolverQueue, useSolverWorkers } from '../../engine/threads/pool.js';
import { MAX_QUEUED_SOLVES } from '../../model/limits.js';
import { SimulationQueue } from '../../store/jobs.js';
import { databaseUrlOf, workspaceOf } from '../options.js';
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
  workers?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
}

/** The database of a command that needs one: --database or NFV_DATABASE_URL. */
function databaseUrl(self: Command, why: string): string {
  const url = databaseUrlOf(self);
  if (!url) throw badRequest(`--database: ${why} needs the database (postgres://USER@HOST:PORT/DATABASE)`);
  return url;
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
  .option('--insecure', 'allow a non-loopback --host without a token or --tls-ca (prints a warning)')
  .option('--log', 'write one access-log line per request to stderr')
  .option('--workers', 'queue simulations in the database for nfv worker processes instead of solving them here')
  .option('--tls-cert <file>', 'serve https with this PEM certificate (and its chain); needs --tls-key')
  .option('--tls-key <file>', 'the PEM private key of --tls-cert, without a passphrase')
  .option('--tls-ca <file>', 'require client certificates signed by these PEM CA certificates (Puppet: its CA)')
  .action(async (opts: ServeOptions, self: Command) => {
    const [{ isLoopback, listen }, { readTls }] = await Promise.all([
      import('../../http/server.js'),
      import('../tls.js'),
    ]);
    const token = opts.token ?? (process.env.NFV_TOKEN || undefined);
    const tls = await readTls(opts);
    // A client certificate checked against --tls-ca authenticates each connection, as it does for PuppetDB.
    const authenticated = token !== undefined || tls?.ca !== undefined;
    if (!isLoopback(opts.host) && !authenticated && !opts.insecure) {
      throw badRequest(
        `--host ${opts.host} is reachable from other machines: give --token (or NFV_TOKEN), or --insecure ` +
          '(or --tls-ca, to require client certificates)',
      );
    }
    useSolverWorkers(opts.solvers, opts.queue);
    const jobs = opts.workers ? new SimulationQueue(databaseUrl(self, '--workers')) : undefined;
    if (jobs) useSolverQueue(jobs);
    let listening;
    try {
      listening = await listen(workspaceOf(self), opts.host, opts.port, {
        token,
        tls,
        log: opts.log ? say : undefined,
      });
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
    if (!isLoopback(opts.host) && !authenticated) {
      say(
        `warning: serving ${opts.host} without authentication (--insecure): ` +
          'anyone who reaches it can change the workspace',
      );
    }
    // Serve until told to stop; then close and leave (solver threads must not keep the process alive).
    await new Promise<void>((resolve) => {
      const stop = () => {
        server.closeAllConnections();
        server.close(() => void Promise.all([stopSolverWorkers(), jobs?.close()]).then(() => resolve()));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
  });

/** `nfv worker`: solves the simulations that `nfv serve --workers` queued in the same database. */
export const workerCommand = new Command('worker')
  .description('solve simulations queued in the database by nfv serve --workers (on any machine)')
  .option('--solvers <n>', 'simulations solved at once, each in its own worker thread', integer(1, 16, 'a count'), 2)
  .action(async (opts: { solvers: number }, self: Command) => {
    const queue = new SimulationQueue(databaseUrl(self, 'a worker'));
    useSolverWorkers(opts.solvers);
    await queue.work(opts.solvers, solveJob);
    say(`solving simulations queued in ${queue.where}, ${opts.solvers} at a time`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await Promise.all([queue.close(), stopSolverWorkers()]);
  });
