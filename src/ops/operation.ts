/**
 * The shape of an operation and the one function that runs any of them: match the path, check the parameters,
 * decode the body, call the handler, and turn the answer or the failure into an `Outcome`. The CLI and the HTTP
 * listener both call `execute`; neither knows more about an operation than its table entry.
 */
import { decodeDocument, detectFormat, parseJson, type ContentType, type Envelope, type Link } from '../model/codec.js';
import { EmptyCollection, NfvError, badRequest, quote } from '../model/errors.js';
import { parseParam } from '../model/ids.js';
import { parseTarget } from '../model/target.js';
import type { Format, ObjectType } from '../model/schema.js';
import type { Workspace } from '../store/workspace.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** What a handler gets: typed path parameters, the query, and the decoded body. */
export interface Input<B = unknown> {
  /** Path parameters, parsed: ids are numbers, names strings (a null-prototype record). */
  params: Record<string, string | number>;
  query: URLSearchParams;
  body: B;
  /** Format of the request body, when there was one. */
  format?: Format;
  ws: Workspace;
  /** Told what a long operation is doing (the CLI shows it in a spinner; serve mode passes nothing). */
  progress?: (phase: string) => void;
  /** Aborted when the caller no longer wants the answer; long operations stop and store nothing. */
  signal?: AbortSignal;
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
  /** Set when the error is a list read of an empty collection (the CLI prints an empty list). */
  empty?: string;
  /** For envelopes: the links of the answer. */
  links?: Link[];
}

export interface Route {
  op: Operation;
  params: Record<string, string | number>;
}

const templates = new WeakMap<Operation, string[]>();
function templateOf(op: Operation): string[] {
  let t = templates.get(op);
  if (!t) templates.set(op, (t = op.path.slice(1).split('/')));
  return t;
}

/** Whether the decoded segments have the shape of the operation's path (parameters not yet checked). */
function fits(op: Operation, segments: string[]): boolean {
  const t = templateOf(op);
  return t.length === segments.length && t.every((seg, k) => seg.startsWith('{') || seg === segments[k]);
}

/** The methods the table offers on a path. */
export function allowedMethods(table: readonly Operation[], segments: string[]): Method[] {
  return [...new Set(table.filter((op) => fits(op, segments)).map((op) => op.method))];
}

/**
 * Finds the operation for a method and decoded path segments and parses its parameters (ids and names, each in the
 * one way of `model/ids`): 404 when no path matches, 405 when only other methods do, 400 for a malformed parameter.
 */
export function route(table: readonly Operation[], method: string, segments: string[]): Route {
  const op = table.find((o) => o.method === method && fits(o, segments));
  if (op) {
    const params: Record<string, string | number> = Object.create(null);
    templateOf(op).forEach((seg, k) => {
      if (seg.startsWith('{')) params[seg.slice(1, -1)] = parseParam(seg.slice(1, -1), segments[k]!);
    });
    return { op, params };
  }
  const shown = `/${segments.join('/')}`;
  const allowed = allowedMethods(table, segments);
  if (allowed.length)
    throw new NfvError(405, `${method} is not allowed on ${quote(shown)} (allowed: ${allowed.join(', ')})`);
  throw new NfvError(404, `no operation at ${quote(shown)}`);
}

export interface Request {
  method: string;
  /** Path with optional query string: `/adp/graphs/3?x=1`. */
  target: string;
  body?: string;
  /** Format of the body, when known (from Content-Type or `--in`); otherwise detected. */
  format?: Format;
  progress?: (phase: string) => void;
  /** Aborted when the client went away (serve) or the user pressed Ctrl-C (CLI). */
  signal?: AbortSignal;
}

/** Links of an `/adp` answer: the resource itself and the collection it belongs to. */
function linksFor(op: Operation, pathname: string): Link[] {
  const title = {
    GET: 'get the resource',
    POST: 'create a new resource',
    PUT: 'modify the resource',
    DELETE: 'delete the resource',
  }[op.method];
  const links: Link[] = [{ rel: 'self', href: pathname, title }];
  const last = op.path.split('/').pop() ?? '';
  if (last.startsWith('{')) links.push({ rel: 'collection', href: pathname.replace(/\/[^/]+\/?$/, '') });
  else links.push({ rel: 'collection', href: pathname });
  return links;
}

/** Runs one request against the operation table. Never throws: failures become outcomes with a status. */
export async function execute(table: readonly Operation[], ws: Workspace, request: Request): Promise<Outcome> {
  let op: Operation | undefined;
  let path = '/';
  try {
    const target = parseTarget(request.target);
    path = target.path;
    const found = route(table, request.method.toUpperCase(), target.segments);
    op = found.op;
    const params = found.params;
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
    const reply = await op.handler({
      params,
      query: target.query,
      body,
      format,
      ws,
      progress: request.progress,
      signal: request.signal,
    });
    const status = reply.status ?? op.status;
    return {
      status,
      op,
      reply,
      links: typeof op.reply === 'object' ? [...linksFor(op, path), ...(reply.links ?? [])] : undefined,
    };
  } catch (e) {
    const status = e instanceof NfvError ? e.status : 500;
    const message = e instanceof NfvError ? e.message : `internal error: ${(e as Error)?.message ?? String(e)}`;
    // Failed /adp reads and creates answer with the envelope kind of their success (interface section 7).
    const enveloped = op && typeof op.reply === 'object' && (op.method === 'GET' || op.method === 'POST');
    const empty = e instanceof EmptyCollection ? e.what : undefined;
    return {
      status,
      op,
      reply: enveloped ? { content: [] } : {},
      error: message,
      empty,
      links: enveloped ? linksFor(op!, path) : undefined,
    };
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
