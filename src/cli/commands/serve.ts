import { Command, InvalidArgumentError } from 'commander';
import { stopSolverWorkers, useSolverWorkers } from '../../engine/pool.js';
import { listen } from '../../http/server.js';
import { workspaceOf } from '../context.js';
import { say } from '../output.js';

const integer = (min: number, max: number, what: string) => (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be ${what} ${min}-${max}`);
  return n;
};

export const serveCommand = new Command('serve')
  .description('serve the operation table over HTTP')
  .option('--host <host>', 'address to bind', '127.0.0.1')
  .option('--port <port>', 'port to listen on (0: any free port)', integer(0, 65535, 'a port number'), 8085)
  .option('--solvers <n>', 'simulations solved at once, each in its own worker thread', integer(1, 16, 'a count'), 2)
  .action(async (opts: { host: string; port: number; solvers: number }, self: Command) => {
    useSolverWorkers(opts.solvers);
    const { server, url } = await listen(workspaceOf(self), opts.host, opts.port);
    say(`listening on ${url}`);
    // Serve until told to stop; then close and leave (solver threads must not keep the process alive).
    await new Promise<void>((resolve) => {
      const stop = () => server.close(() => void stopSolverWorkers().then(resolve));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
  });
