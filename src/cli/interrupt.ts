/** Ctrl-C as an abort signal for the running request. */
import { EXIT } from '../model/errors.js';

let interruption: AbortController | undefined;

/** Drops bin/nfv's listener for a Ctrl-C that comes before a command starts (marked `nfvEarly`). */
export function dropEarlyInterrupt(): void {
  for (const listener of process.listeners('SIGINT'))
    if ((listener as { nfvEarly?: boolean }).nfvEarly) process.removeListener('SIGINT', listener);
}

/**
 * Aborted on Ctrl-C: the running request stops (a simulation's solver thread is terminated) and stores nothing. If
 * the command has not ended a second later, or on a second Ctrl-C, the process exits 130 at once.
 */
export function interruptSignal(): AbortSignal {
  if (!interruption) {
    const controller = (interruption = new AbortController());
    process.once('SIGINT', () => {
      controller.abort();
      setTimeout(() => process.exit(EXIT.interrupted), 1000).unref();
      process.once('SIGINT', () => process.exit(EXIT.interrupted));
    });
  }
  return interruption.signal;
}
