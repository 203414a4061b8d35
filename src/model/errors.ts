/**
 * The one error type of nfv. It carries the HTTP status that serve mode answers with; the CLI derives its exit code
 * from the same status, so a handler never needs to know which front end called it.
 */
export class NfvError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    // A safety net: messages are one line of a sensible length even if a caller quoted a value whole.
    const line = message.split('\n')[0]!;
    super(line.length > MAX_MESSAGE ? `${line.slice(0, MAX_MESSAGE - 1)}…` : line);
    this.name = 'NfvError';
  }
}

const MAX_MESSAGE = 600;
/** Longest rendering of a user's value inside a message. */
export const MAX_QUOTED = 120;

/** A user's text inside a message in someone else's quoting style (PuppetDB's '...'): cut to 120 characters. */
export const clip = (text: string) => (text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED - 1)}…` : text);

/** A user's value inside a message: JSON-quoted and cut to 120 characters, so a 1 MB value gives a short line. */
export function quote(value: unknown): string {
  const shortened = typeof value === 'string' && value.length > MAX_QUOTED ? value.slice(0, MAX_QUOTED) : value;
  let text: string;
  try {
    text = JSON.stringify(shortened) ?? String(shortened);
  } catch {
    text = String(shortened);
  }
  return text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED - 1)}…` : text;
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
  interrupted: 130,
} as const;

/** Status of a request whose client went away or whose CLI got Ctrl-C (nginx's 499); nothing is stored. */
export const CLIENT_GONE = 499;

export function exitCodeFor(status: number): number {
  if (status < 400) return EXIT.ok;
  if (status === 404) return EXIT.notFound;
  // Conflicts, missing dependencies, a damaged or busy workspace, a full disk: the state of things, not the input.
  if (status === 409 || status === 424 || status === 503 || status === 507) return EXIT.conflict;
  if (status === CLIENT_GONE) return EXIT.interrupted;
  if (status === 504) return EXIT.timeout;
  if (status >= 500) return EXIT.internal;
  return EXIT.invalid;
}

export const badRequest = (message: string) => new NfvError(400, message);
export const notFound = (message: string) => new NfvError(404, message);
export const conflict = (message: string) => new NfvError(409, message);
export const failedDependency = (message: string) => new NfvError(424, message);
/**
 * A list read of a collection that is empty: the interface answers 404, the CLI prints an empty list and exits 0.
 * `what` names the items ("graphs").
 */
export class EmptyCollection extends NfvError {
  constructor(readonly what: string) {
    super(404, `the workspace holds no ${what}`);
  }
}

export const interrupted = () => new NfvError(CLIENT_GONE, 'interrupted: nothing was stored');
