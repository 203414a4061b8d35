/**
 * The shape of an operation and the one function that runs any of them: match the path, check the parameters,
 * decode the body, call the handler, and turn the answer or the failure into an `Outcome`. The CLI and the HTTP
 * listener both call `execute`; neither knows more about an operation than its table entry.
 */
import { decodeDocument, detectFormat, parseJson, type ContentType, type Envelope, type Link } from '../model/codec.js';
import { NfvError, badRequest } from '../model/errors.js';
import type { Format, ObjectType } from '../model/schema.js';
import type { Workspace } from '../store/workspace.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** What a handler gets: typed path parameters, the query, and the decoded body. */
export interface Input<B = unknown> {
  params: Record<string, string | number>;
  query: URLSearchParams;
  body: B;
  /** Format of the request body, when there was one. */
  format?: Format;
  ws: Workspace;
  /** Told what a long operation is doing (the CLI shows it in a spinner; serve mode passes nothing). */
  progress?: (phase: string) => void;
}

/** What a handler returns: the data of the answer; the operation's entry says how it is represented. */
export interface Reply {
  status?: number;
  /** Envelope content items (`/adp`). */
  content?: unknown[];
  /** A JSON value (`/fwd`, `/v4`). */
  value?: unknown;
  /** Write the JSON value without indentation (large `/v4` answers, as PuppetDB does unless `pretty`). */
  compact?: boolean;
  /** A text file (deployment output). */
  text?: { body: string; filename: string; mediaType: string };
  headers?: Record<string, string>;
  /** Links beyond self and collection (the stored simulation of a run). */
  links?: Link[];
  /** Facts for the front ends that are not part of the representation (a simulation's report). */
  meta?: Record<string, unknown>;
}

/** How the answer of an operation is represented. */
export type ReplyKind = { envelope: ContentType } | 'json' | 'text' | 'none';

export interface Operation {
  /** Name of the operation, `graphs.get`, used by the CLI and the docs. */
  name: string;
  method: Method;
  /** Path template, `/adp/graphs/{gid}`. */
  path: string;
  summary: string;
  /** Request body: a resource of the model, raw JSON, or none. */
  body?: ObjectType | 'json';
  /** Body formats accepted; default XML and JSON. */
  bodyFormats?: Format[];
  reply: ReplyKind;
  status: number;
  /** Other statuses the operation answers with, as documented. */
  errors: number[];
  handler: (input: Input<any>) => Promise<Reply>;
}

export interface Outcome {
  status: number;
  op?: Operation;
  /** The answer's data, or the failure's message. */
  reply: Reply;
  error?: string;
  /** For envelopes: the links of the answer. */
  links?: Link[];
}

/** Types of path parameters: ids are int64, host names, resource types and titles are strings. */
const STRING_PARAMS = new Set(['hid', 'type', 'title', 'hash']);

export interface Route {
  op: Operation;
  params: Record<string, string>;
}

const compiled = new WeakMap<Operation, RegExp>();
function pattern(op: Operation): RegExp {
  let re = compiled.get(op);
  if (!re) {
    const source = op.path
      .split('/')
      .map((seg) => (seg.startsWith('{') ? `(?<${seg.slice(1, -1)}>[^/]+)` : seg.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
      .join('/');
    re = new RegExp(`^${source}/?$`);
    compiled.set(op, re);
  }
  return re;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(`malformed path segment ${JSON.stringify(segment)}`);
  }
}

/** The methods the table offers on a path. */
export function allowedMethods(table: readonly Operation[], pathname: string): Method[] {
  return [...new Set(table.filter((op) => pattern(op).test(pathname)).map((op) => op.method))];
}

/** Finds the operation for a method and path: 404 when no path matches, 405 when only other methods do. */
export function route(table: readonly Operation[], method: string, pathname: string): Route {
  for (const op of table) {
    const m = op.method === method ? pattern(op).exec(pathname) : null;
    if (m) {
      const params = Object.fromEntries(Object.entries(m.groups ?? {}).map(([k, v]) => [k, decodeSegment(v)]));
      return { op, params };
    }
  }
  const allowed = allowedMethods(table, pathname);
  if (allowed.length) throw new NfvError(405, `${method} is not allowed on ${pathname} (allowed: ${allowed.join(', ')})`);
  throw new NfvError(404, `no operation at ${pathname}`);
}

/** An int64 id given in a path segment or a query parameter; 400 naming the parameter otherwise. */
export function parseId(name: string, text: string): number {
  if (!/^\d{1,19}$/.test(text) || !Number.isSafeInteger(Number(text))) throw badRequest(`${name}: ${JSON.stringify(text)} is not an int64 id`);
  return Number(text);
}

function typedParams(params: Record<string, string>): Record<string, string | number> {
  return Object.fromEntries(Object.entries(params).map(([name, raw]) => [name, STRING_PARAMS.has(name) ? raw : parseId(name, raw)]));
}

export interface Request {
  method: string;
  /** Path with optional query string: `/adp/graphs/3?x=1`. */
  target: string;
  body?: string;
  /** Format of the body, when known (from Content-Type or `--in`); otherwise detected. */
  format?: Format;
  progress?: (phase: string) => void;
}

/** Links of an `/adp` answer: the resource itself and the collection it belongs to. */
function linksFor(op: Operation, pathname: string): Link[] {
  const title = { GET: 'get the resource', POST: 'create a new resource', PUT: 'modify the resource', DELETE: 'delete the resource' }[op.method];
  const links: Link[] = [{ rel: 'self', href: pathname, title }];
  const last = op.path.split('/').pop() ?? '';
  if (last.startsWith('{')) links.push({ rel: 'collection', href: pathname.replace(/\/[^/]+\/?$/, '') });
  else links.push({ rel: 'collection', href: pathname });
  return links;
}

/** Runs one request against the operation table. Never throws: failures become outcomes with a status. */
export async function execute(table: readonly Operation[], ws: Workspace, request: Request): Promise<Outcome> {
  const url = new URL(request.target, 'http://nfv.invalid');
  let op: Operation | undefined;
  try {
    const found = route(table, request.method.toUpperCase(), url.pathname);
    op = found.op;
    const params = typedParams(found.params);
    let body: unknown;
    let format: Format | undefined;
    if (op.body) {
      if (request.body === undefined || request.body.trim() === '') throw badRequest('a request body is required');
      format = request.format ?? detectFormat(request.body);
      if (op.bodyFormats && format && !op.bodyFormats.includes(format)) {
        throw badRequest(`the body must be ${op.bodyFormats.join(' or ').toUpperCase()}`);
      }
      body = op.body === 'json' ? parseJson(request.body) : decodeDocument(op.body, request.body, format);
    }
    const reply = await op.handler({ params, query: url.searchParams, body, format, ws, progress: request.progress });
    const status = reply.status ?? op.status;
    return { status, op, reply, links: typeof op.reply === 'object' ? [...linksFor(op, url.pathname), ...(reply.links ?? [])] : undefined };
  } catch (e) {
    const status = e instanceof NfvError ? e.status : 500;
    const message = e instanceof NfvError ? e.message : `internal error: ${(e as Error)?.message ?? String(e)}`;
    // Failed /adp reads and creates answer with the envelope kind of their success (interface section 7).
    const enveloped = op && typeof op.reply === 'object' && (op.method === 'GET' || op.method === 'POST');
    return { status, op, reply: enveloped ? { content: [] } : {}, error: message, links: enveloped ? linksFor(op!, url.pathname) : undefined };
  }
}

/** The envelope of an outcome, for the renderers. */
export function envelopeOf(outcome: Outcome): Envelope {
  return {
    links: outcome.links ?? [],
    content: outcome.reply.content ?? [],
    ...(outcome.error ? { error: { status: outcome.status, message: outcome.error } } : {}),
  };
}
