/**
 * The one error type of nfv. It carries the HTTP status that serve mode answers with; the CLI derives its exit code
 * from the same status, so a handler never needs to know which front end called it.
 */
export class NfvError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'NfvError';
  }
}

/** Exit codes of the CLI, documented in the README and the man page. */
export const EXIT = {
  ok: 0,
  unsatisfied: 1,
  invalid: 2,
  notFound: 3,
  conflict: 4,
  timeout: 5,
  internal: 70,
} as const;

export function exitCodeFor(status: number): number {
  if (status < 400) return EXIT.ok;
  if (status === 404) return EXIT.notFound;
  if (status === 409 || status === 424) return EXIT.conflict;
  if (status === 504) return EXIT.timeout;
  if (status >= 500) return EXIT.internal;
  return EXIT.invalid;
}

export const badRequest = (message: string) => new NfvError(400, message);
export const notFound = (message: string) => new NfvError(404, message);
export const conflict = (message: string) => new NfvError(409, message);
export const failedDependency = (message: string) => new NfvError(424, message);
