/**
 * The shape of an operation and the one function that runs any of them: match the path, check the parameters,
 * decode the body, call the handler, and turn the answer or the failure into an `Outcome`. The CLI and the HTTP
 * listener both call `execute`; neither knows more about an operation than its table entry.
 */
import { decodeDocument, detectFormat, parseJson, type ContentType, type Envelope, type Link } from '../model/codec.js';
import { EmptyCollection, NfvError, badRequest, quote } from '../model/errors.js';
import { parseParam } from '../model/ids.js';
import { parseTarget, parseTargetWithRest } from '../model/target.js';
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
  /** The request body as it was sent, for operations that check it byte for byte (a checksum). */
  text?: string;
  /** The request's Content-Type header as sent (serve), for operations that refuse other media types. */
  contentType?: string;
  /** Seconds spent parsing and checking the body. */
  parseSeconds: number;
  ws: Workspace;
  /** Told what a long operation is doing (the CLI shows it in a spinner; serve mode passes nothing). */
  progress?: (phase: string) => void;
  /** Aborted when the caller no longer wants the answer; long operations stop and store nothing. */
  signal?: AbortSignal;
}

interface ReplyBase {
  /** A status other than the operation's usual one. */
  status?: number;
  headers?: Record<string, string>;
  /** The path of what was created (201) or where to look next (302); serve answers it as an absolute URL. */
  location?: string;
}

/** `/adp` envelope content items. */
export interface EnvelopeReply<C = unknown> extends ReplyBase {
  kind: 'envelope';
  content: C[];
  /** Links beyond self and collection (the stored simulation of a run). */
  links?: Link[];
}

/** A JSON value (`/fwd`, `/v4`). */
export interface JsonReply<V = unknown> extends ReplyBase {
  kind: 'json';
  value: V;
  /** Written without indentation (large `/v4` answers, as PuppetDB does unless `pretty`). */
  compact?: boolean;
  /** The compact JSON text of `value` when the handler has it already (rows the database rendered). */
  text?: string;
  /** The resource type of `value` (or of each item, with `many`), for answers also written as XML (`/fwd`). */
  schema?: ObjectType;
  many?: boolean;
}

/** A text file (deployment output, drawings). */
export interface TextReply extends ReplyBase {
  kind: 'text';
  body: string;
  filename: string;
  mediaType: string;
}

/** Done, nothing to show but the status. */
export interface DoneReply extends ReplyBase {
  kind: 'done';
}

/** Nothing to do (a bulk delete of an empty collection): HTTP 304, and the CLI says why and exits 0. */
export interface NotModifiedReply {
  kind: 'notModified';
  message: string;
}

/** What a handler returns: the data of the answer, one kind per representation. */
export type Reply = EnvelopeReply | JsonReply | TextReply | DoneReply | NotModifiedReply;

export const envelope = <C>(...content: C[]): EnvelopeReply<C> => ({ kind: 'envelope', content });
export const json = <V>(value: V, more: Omit<JsonReply, 'kind' | 'value'> = {}): JsonReply<V> => ({
  kind: 'json',
  value,
  ...more,
});
export const done = (status?: number): DoneReply => ({ kind: 'done', status });
export const text = (body: string, filename: string, mediaType: string): TextReply => ({
  kind: 'text',
  body,
  filename,
  mediaType,
});
export const notModified = (message: string): NotModifiedReply => ({ kind: 'notModified', message });

/** How the answer of an operation is represented. */
export type ReplyKind = { envelope: ContentType } | 'json' | 'text' | 'none';

/**
 * How the operation's failures are written: `envelope`, the envelope of its success with an error (the `/adp`
 * reads and creates, interface section 7); `document`, an error document in the format asked for (other `/adp`
 * operations); `json`, a JSON error object (`/fwd`); `puppetdb`, PuppetDB's conventions (`/v4`);
 * `puppetdb-command`, PuppetDB's command endpoint (`{"error": ...}` for every refusal).
 */
export type ErrorFormat = 'envelope' | 'document' | 'json' | 'puppetdb' | 'puppetdb-command';

/** An operation: where it is, what it takes, how it answers, and its handler. `B` is its body, `R` its reply. */
export interface Operation<B = unknown, R extends Reply = Reply> {
  /** Name of the operation, `graphs.get`, used in the docs and by --verbose. */
  name: string;
  method: Method;
  /** Path template, `/adp/graphs/{gid}`. */
  path: string;
  summary: string;
  /** Request body: a resource of the model, raw JSON, or none. */
  body?: ObjectType<B> | 'json';
  /** Body formats accepted; default XML and JSON. */
  bodyFormats?: Format[];
  reply: ReplyKind;
  /** For a `json` reply: the resource type its value is also written in as XML (`--format xml`, Accept). */
  replySchema?: ObjectType;
  status: number;
  errors: ErrorFormat;
  // A method, so that the table can hold operations of every body type (parameters are checked bivariantly).
  handler(input: Input<B>): Promise<R>;
}

/** Declares an operation, inferring its body type from its schema and its reply type from its handler. */
export const operation = <B = unknown, R extends Reply = Reply>(op: Operation<B, R>): Operation<B, R> => op;

/** The result of running an operation: its reply, or its failure. */
export type Outcome<R extends Reply = Reply> = Answered<R> | Failed;

export interface Answered<R extends Reply = Reply> {
  ok: true;
  status: number;
  op: Operation;
  reply: R;
  /** For envelopes: the links of the answer. */
  links?: Link[];
}

export interface Failed {
  ok: false;
  status: number;
  op?: Operation;
  error: string;
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
  if (!t) templates.set(op, (t = op.path === '/' ? [] : op.path.slice(1).split('/')));
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
  /** The Content-Type header as sent (serve only). */
  contentType?: string;
  progress?: (phase: string) => void;
  /** Aborted when the client went away (serve) or the user pressed Ctrl-C (CLI). */
  signal?: AbortSignal;
}

/** A call of a known operation (the CLI's): parameters already parsed, the body still text. */
export interface Call {
  params?: Record<string, string | number>;
  query?: URLSearchParams;
  body?: string;
  /** The body as the operation's schema decodes it, when that was done already (`nfv simulate FILE`'s early job). */
  decoded?: unknown;
  format?: Format;
  contentType?: string;
  progress?: (phase: string) => void;
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

/** The path of an operation with its parameters filled in, as a client would have asked for it. */
export function pathOf(op: Operation, params: Record<string, string | number>): string {
  return op.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(params[name])));
}

/** Runs one HTTP-style request against the operation table. Never throws: failures become outcomes. */
export async function execute(table: readonly Operation[], ws: Workspace, request: Request): Promise<Outcome> {
  let found: Resolved;
  try {
    found = resolve(table, request.method, request.target);
  } catch (e) {
    return failure(e, undefined, '/');
  }
  const { body, format, contentType, progress, signal } = request;
  const call = { params: found.params, query: found.query, body, format, contentType, progress, signal };
  return invoke(found.op, ws, call, found.path);
}

/** A request target resolved to its operation: the parsed parameters, the query and the decoded path. */
export interface Resolved extends Route {
  query: URLSearchParams;
  path: string;
}

/** Parses a request target and routes it: 400 for a malformed target or parameter, 404, 405. */
export function resolve(table: readonly Operation[], method: string, target: string): Resolved {
  const m = method.toUpperCase();
  try {
    const parsed = parseTarget(target);
    return { ...route(table, m, parsed.segments), query: parsed.query, path: parsed.path };
  } catch (e) {
    const withTitle = routeTitleRest(table, m, target);
    if (withTitle) return withTitle;
    throw e;
  }
}

/**
 * The route of a path whose last parameter is a resource title holding `/` unescaped (`/resources/File//etc/hosts`,
 * as pypuppetdb asks): the title takes the rest of the path, as in PuppetDB. Undefined when no such route fits.
 */
function routeTitleRest(table: readonly Operation[], method: string, target: string): Resolved | undefined {
  for (const op of table) {
    const t = templateOf(op);
    if (op.method !== method || t[t.length - 1] !== '{title}') continue;
    let parsed;
    try {
      parsed = parseTargetWithRest(target, t.length - 1);
    } catch {
      continue; // the caller answers parseTarget's own refusal
    }
    if (parsed && fits(op, parsed.segments))
      return { ...route([op], method, parsed.segments), query: parsed.query, path: parsed.path };
  }
  return undefined;
}

/**
 * Runs one operation: decodes the body, calls the handler, and turns the answer or the failure into an `Outcome`.
 * Never throws. `path` is the request's path, for the links of an envelope (default: the operation's, filled in).
 */
export async function invoke<B, R extends Reply>(
  op: Operation<B, R>,
  ws: Workspace,
  call: Call = {},
  path?: string,
): Promise<Outcome<R>> {
  const params = call.params ?? Object.create(null);
  // Seen as an operation of any body: its handler takes what its own schema decodes.
  const anyBody: Operation<unknown, R> = op;
  try {
    return await run(anyBody, ws, { ...call, params, query: call.query ?? new URLSearchParams() }, path);
  } catch (e) {
    return failure(e, op, path ?? pathOf(op, params));
  }
}

async function run<R extends Reply>(
  op: Operation<unknown, R>,
  ws: Workspace,
  call: Call & { params: Record<string, string | number>; query: URLSearchParams },
  path = pathOf(op, call.params),
): Promise<Answered<R>> {
  const parsing = performance.now();
  const { body, format } = decodeBody(op, call);
  const reply = await op.handler({
    params: call.params,
    query: call.query,
    body,
    format,
    text: call.body,
    contentType: call.contentType,
    parseSeconds: Math.round(performance.now() - parsing) / 1000,
    ws,
    progress: call.progress,
    signal: call.signal,
  });
  const status = reply.kind === 'notModified' ? 304 : (reply.status ?? op.status);
  const links = reply.kind === 'envelope' ? [...linksFor(op, path), ...(reply.links ?? [])] : undefined;
  return { ok: true, status, op, reply, links };
}

/** The request body, decoded by the operation's schema (a body the operation does not take is ignored). */
function decodeBody(op: Operation<unknown>, call: Call): { body: unknown; format?: Format } {
  const schema = op.body;
  if (!schema) return { body: undefined };
  if (call.body === undefined || call.body.trim() === '') throw badRequest('a request body is required');
  const format = call.format ?? detectFormat(call.body);
  if (op.bodyFormats && format && !op.bodyFormats.includes(format)) {
    throw badRequest(`the body must be ${op.bodyFormats.join(' or ').toUpperCase()}`);
  }
  if (call.decoded !== undefined) return { body: call.decoded, format };
  return { body: schema === 'json' ? parseJson(call.body) : decodeDocument(schema, call.body, format), format };
}

function failure(e: unknown, op: Operation | undefined, path: string): Failed {
  const status = e instanceof NfvError ? e.status : 500;
  const message = e instanceof NfvError ? e.message : `internal error: ${(e as Error)?.message ?? String(e)}`;
  return {
    ok: false,
    status,
    op,
    error: message,
    empty: e instanceof EmptyCollection ? e.what : undefined,
    links: op?.errors === 'envelope' ? linksFor(op, path) : undefined,
  };
}

/** The envelope of an outcome, for the renderers. */
export function envelopeOf(outcome: Outcome): Envelope {
  if (!outcome.ok)
    return { links: outcome.links ?? [], content: [], error: { status: outcome.status, message: outcome.error } };
  return { links: outcome.links ?? [], content: outcome.reply.kind === 'envelope' ? outcome.reply.content : [] };
}
