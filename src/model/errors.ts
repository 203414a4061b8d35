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
    super(clip(message.split('\n')[0]!, MAX_MESSAGE));
    this.name = 'NfvError';
  }
}

/** Longest message: a user's values are cut (`clip`) and lists shortened (`listWithin`) to stay within it. */
export const MAX_MESSAGE = 300;
/** Longest rendering of a user's value inside a message. */
export const MAX_QUOTED = 120;

/**
 * The one cut of a user's text inside a message: at most `max` characters, the last of them an ellipsis when
 * something was cut (never half of a surrogate pair), so that a 100 KB value gives a short line.
 */
export function clip(text: string, max = MAX_QUOTED): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

/** A user's value inside a message: JSON-quoted and cut to 120 characters, quotes included. */
export function quote(value: unknown): string {
  // Only the part that can be shown is encoded.
  const shortened = typeof value === 'string' ? value.slice(0, MAX_QUOTED) : value;
  let text: string;
  try {
    text = JSON.stringify(shortened) ?? String(shortened);
  } catch {
    text = String(shortened);
  }
  return clip(text);
}

/**
 * Names listed in a message within `room` characters, each quoted '...' and cut: 'a', 'b', and 'c' (PuppetDB's
 * style; 'a', 'b', 'c' with `and` false), or the first that fit and how many more there are.
 */
export function listWithin(names: string[], room: number, and = true): string {
  const q = names.map((n) => `'${clip(n)}'`);
  const whole = (items: string[]) =>
    and && items.length > 1
      ? items.length === 2
        ? items.join(' and ')
        : `${items.slice(0, -1).join(', ')}, and ${items.at(-1)}`
      : items.join(', ');
  const all = whole(q);
  if (all.length <= room) return all;
  for (let n = q.length - 1; n > 0; n--) {
    const rest = `and ${q.length - n} more`;
    const text = `${q.slice(0, n).join(', ')}, ${rest}`;
    if (text.length <= room) return text;
  }
  return `${q.length} name${q.length === 1 ? '' : 's'}`;
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
/** A valid input beyond a documented bound of what nfv can model (the message names the bound and its figure). */
export const beyondBound = (message: string) => new NfvError(422, message);
/**
 * A list read of a collection that is empty: the interface answers 404, the CLI prints an empty list and exits 0.
 * `what` names the items ("graphs").
 */
export class EmptyCollection extends NfvError {
  constructor(
    readonly what: string,
    message = `the workspace holds no ${what}`,
  ) {
    super(404, message);
  }
}

export const interrupted = () => new NfvError(CLIENT_GONE, 'interrupted: nothing was stored');
