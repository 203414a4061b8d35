import { Command, InvalidArgumentError } from 'commander';
import { listen } from '../../http/server.js';
import { workspaceOf } from '../context.js';
import { say } from '../output.js';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number 0-65535');
  return n;
}

export const serveCommand = new Command('serve')
  .description('serve the operation table over HTTP')
  .option('--host <host>', 'address to bind', '127.0.0.1')
  .option('--port <port>', 'port to listen on (0: any free port)', port, 8085)
  .action(async (opts: { host: string; port: number }, self: Command) => {
    const { server, url } = await listen(workspaceOf(self), opts.host, opts.port);
    say(`listening on ${url}`);
    // Serve until told to stop; then close and leave (solver threads must not keep the process alive).
    await new Promise<void>((resolve) => {
      const stop = () => server.close(() => resolve());
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
  });
