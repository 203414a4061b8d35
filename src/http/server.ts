/**
 * Serve mode: an HTTP listener on node:http, or node:https with --tls-*, that routes every request to the operation
 * table, with content negotiation (Content-Type for the body, Accept for the answer), a body size limit, a bound on
 * body bytes buffered at once, optional bearer-token authentication, an access log, and cancellation when a client
 * goes away. Both listeners get one handler and one set of limits (`LISTENER_SETTINGS`).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { decodeUtf8 } from '../model/codec.js';
import { NfvError, clip } from '../model/errors.js';
import {
  HEADERS_TIMEOUT_MS,
  KEEP_ALIVE_TIMEOUT_MS,
  MAX_BUFFERED_BODY_BYTES,
  MAX_DOCUMENT_BYTES,
  MAX_HEADER_BYTES,
  REQUEST_TIMEOUT_MS,
  TLS_HANDSHAKE_TIMEOUT_MS,
} from '../model/limits.js';
import type { Format } from '../model/schema.js';
import { parseTarget } from '../model/target.js';
import { allowedMethods, execute, resolve, type Operation, type Outcome } from '../ops/operation.js';
import { render } from '../ops/render.js';
import { OPERATIONS } from '../ops/table.js';
import type { Workspace } from '../store/workspace.js';

function formatOf(mediaType: string | undefined): Format | undefined {
  if (!mediaType) return undefined;
  if (/json/i.test(mediaType)) return 'json';
  if (/xml/i.test(mediaType)) return 'xml';
  return undefined;
}

/** The answer's format: the first of JSON or XML that Accept names, else the request body's, else JSON. */
function acceptedFormat(accept: string | undefined, fallback: Format | undefined): Format {
  for (const part of (accept ?? '').split(',')) {
    const f = formatOf(part);
    if (f) return f;
  }
  return fallback ?? 'json';
}

export interface ServerOptions {
  table?: readonly Operation[];
  maxBodyBytes?: number;
  /** Body bytes buffered at once over all requests; a request that would pass it gets 503. */
  maxBufferedBytes?: number;
  /** When set, every request needs `Authorization: Bearer <token>`. */
  token?: string;
  /** Where one access-log line per request goes (serve --log: stderr); over TLS also each failed handshake. */
  log?: (line: string) => void;
  /** Serve https with this certificate and key (PEM); with `ca`, every client must present a certificate it signed. */
  tls?: TlsMaterial;
}

/** What serve --tls-cert, --tls-key and --tls-ca name, read and checked (PEM texts). */
export interface TlsMaterial {
  /** The server's certificate, optionally followed by the chain that signed it. */
  cert: string;
  key: string;
  /** Certificates that client certificates must be signed by; none asked for without it. */
  ca?: string;
}

/** The limits of both listeners, plain and TLS: one object, so that neither can have settings the other lacks. */
export const LISTENER_SETTINGS = {
  maxHeaderSize: MAX_HEADER_BYTES,
  headersTimeout: HEADERS_TIMEOUT_MS,
  requestTimeout: REQUEST_TIMEOUT_MS,
  keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
} as const satisfies http.ServerOptions;

/** Counts body bytes held by all requests, so that many large bodies at once are refused rather than buffered. */
class BodyBudget {
  private used = 0;
  constructor(private readonly limit: number) {}
  take(n: number): boolean {
    if (this.used + n > this.limit) return false;
    this.used += n;
    return true;
  }
  give(n: number): void {
    this.used -= n;
  }
}

function readBody(req: http.IncomingMessage, limit: number, budget: BodyBudget): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    const fail = (e: NfvError) => {
      failed = true;
      budget.give(size);
      chunks.length = 0;
      req.resume();
      reject(e);
    };
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      if (size + chunk.length > limit) return fail(new NfvError(413, `request body larger than ${limit} bytes`));
      if (!budget.take(chunk.length))
        return fail(new NfvError(503, 'the server is busy reading other large requests; try again shortly'));
      size += chunk.length;
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (failed) return;
      const body = Buffer.concat(chunks);
      budget.give(size);
      resolve(body);
    });
    req.on('error', (e) => {
      if (!failed) fail(new NfvError(400, `the request body could not be read: ${e.message}`));
    });
  });
}

/**
 * VEREFOO serves its API under the context path `/verefoo` (its `application.properties`), and its clients and
 * OpenAPI document address `http://host:8085/verefoo/adp/...`: a target under it is the same operation without it,
 * and the Location of its answer keeps it. Returns the context ('' for none) and the target within it.
 */
export function contextOf(target: string): [context: string, target: string] {
  const match = /^\/verefoo(?=$|[/?])/.exec(target);
  if (!match) return ['', target];
  const rest = target.slice(match[0].length);
  return [match[0], rest === '' || rest.startsWith('?') ? `/${rest}` : rest];
}

/** The operation a request is for, if its target routes to one. */
function operationOf(table: readonly Operation[], method: string, target: string): Operation | undefined {
  try {
    return resolve(table, method, target).op;
  } catch {
    return undefined;
  }
}

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);

/**
 * A request body as sent with `Content-Encoding` gzip or deflate (PuppetDB takes both on its command endpoint),
 * inflated within the same size limit as a plain body: a small bomb cannot grow past it.
 */
async function decoded(bytes: Buffer, encoding: string | undefined, limit: number): Promise<Buffer> {
  const name = (encoding ?? '').trim().toLowerCase();
  if (name === '' || name === 'identity' || bytes.length === 0) return bytes;
  const inflater = name === 'gzip' || name === 'x-gzip' ? gunzip : name === 'deflate' ? inflate : undefined;
  if (!inflater) throw new NfvError(415, `Content-Encoding ${clip(name)} is not supported (gzip, deflate)`);
  try {
    return await inflater(bytes, { maxOutputLength: limit });
  } catch (e) {
    if ((e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE')
      throw new NfvError(413, `request body larger than ${limit} bytes once inflated`);
    throw new NfvError(400, `the request body is not valid ${name} data: ${clip((e as Error).message)}`);
  }
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Compares a bearer token in constant time (over digests, so the lengths need not match). */
function authorised(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m !== null && timingSafeEqual(digest(m[1]!), digest(token));
}

function allowHeader(table: readonly Operation[], target: string): string {
  try {
    return allowedMethods(table, parseTarget(target).segments).join(', ');
  } catch {
    return '';
  }
}

/** The listener: https when `options.tls` is given, else http; either way the same handler and limits. */
export function createServer(ws: Workspace, options: ServerOptions = {}): http.Server {
  const handler = requestHandler(ws, options);
  const { tls } = options;
  if (!tls) return http.createServer(LISTENER_SETTINGS, handler);
  const server = https.createServer(
    {
      ...LISTENER_SETTINGS,
      cert: tls.cert,
      key: tls.key,
      handshakeTimeout: TLS_HANDSHAKE_TIMEOUT_MS,
      // With a CA, a client without a certificate it signed is refused during the handshake, as PuppetDB does.
      ...(tls.ca === undefined ? {} : { ca: tls.ca, requestCert: true, rejectUnauthorized: true }),
    },
    handler,
  );
  // Node closes the connection either way; the log says why (plain HTTP, an unknown CA, no client certificate).
  server.on('tlsClientError', (e: Error & { code?: string; reason?: string }, socket: TLSSocket) => {
    // OpenSSL's message spans lines and names its source file; its reason and code say it in one line. A client
    // certificate that --tls-ca did not sign is refused by Node after the handshake, which says only that it hung up.
    const refused = socket.authorizationError;
    const why = refused
      ? `client certificate refused (${String(refused)})`
      : `${e.reason ?? e.message.split('\n')[0]}${e.code ? ` (${e.code})` : ''}`;
    options.log?.(`${new Date().toISOString()} ${socket.remoteAddress ?? '-'} TLS handshake failed: ${why}`);
  });
  return server;
}

function requestHandler(ws: Workspace, options: ServerOptions): http.RequestListener {
  const table = options.table ?? OPERATIONS;
  const budget = new BodyBudget(options.maxBufferedBytes ?? MAX_BUFFERED_BODY_BYTES);
  return async (req, res) => {
    const started = performance.now();
    const [context, target] = contextOf(req.url ?? '/');
    const requestFormat = formatOf(req.headers['content-type']);
    const answerFormat = acceptedFormat(req.headers.accept, requestFormat);
    // A client that goes away before its answer cancels the work (a running simulation stops, nothing is stored).
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    let outcome: Outcome;
    try {
      if (options.token !== undefined && !authorised(req.headers.authorization, options.token)) {
        throw new NfvError(401, 'a bearer token is required (Authorization: Bearer TOKEN)');
      }
      const limit = options.maxBodyBytes ?? MAX_DOCUMENT_BYTES;
      const bytes = await decoded(await readBody(req, limit, budget), req.headers['content-encoding'], limit);
      const body = bytes.length ? decodeUtf8(bytes, 'the request body') : undefined;
      outcome = await execute(table, ws, {
        method: req.method ?? 'GET',
        target,
        body,
        format: requestFormat,
        contentType: req.headers['content-type'],
        signal: gone.signal,
      });
    } catch (e) {
      const status = e instanceof NfvError ? e.status : 500;
      outcome = {
        ok: false,
        status,
        // A body refused before the operation ran is still answered in its operation's error format.
        op: operationOf(table, req.method ?? 'GET', target),
        error: e instanceof NfvError ? e.message : `internal error: ${(e as Error).message}`,
      };
    }
    const rendered = render(outcome, answerFormat);
    const location = rendered.headers.Location;
    // A Location is a path in the answer; clients (JAX-RS) follow only absolute URLs: the one this request came to.
    if (location?.startsWith('/'))
      rendered.headers.Location = `${options.tls ? 'https' : 'http'}://${hostOf(req)}${context}${location}`;
    const noBody = rendered.status === 304 || rendered.status === 204 || rendered.body === '';
    // Encoded once: a large answer's text (55 MB) is otherwise walked for its length and encoded again to be sent.
    const bytes = noBody ? undefined : Buffer.from(rendered.body);
    const length = bytes?.length ?? 0;
    if (!res.destroyed) {
      res.writeHead(rendered.status, {
        ...asciiHeaders(rendered.headers),
        ...(noBody ? {} : { 'Content-Type': withCharset(rendered.mediaType), 'Content-Length': length }),
        ...(outcome.status === 405 ? { Allow: allowHeader(table, target) } : {}),
        ...(outcome.status === 503 ? { 'Retry-After': '1' } : {}),
        ...(outcome.status === 401 ? { 'WWW-Authenticate': 'Bearer' } : {}),
      });
      res.end(bytes);
    }
    const ms = (performance.now() - started).toFixed(1);
    const request = `${req.socket.remoteAddress ?? '-'} ${req.method} ${(req.url ?? '/').slice(0, 200)}`;
    options.log?.(`${new Date().toISOString()} ${request} ${rendered.status} ${length} ${ms}ms`);
  };
}

/** The media type with UTF-8 named once (a deployment file's type names it already). */
const withCharset = (mediaType: string) =>
  /;\s*charset=/i.test(mediaType) ? mediaType : `${mediaType}; charset=utf-8`;

/** The authority the client addressed: its Host header, else the address it reached. */
function hostOf(req: http.IncomingMessage): string {
  const host = req.headers.host;
  if (host && /^[A-Za-z0-9.:[\]-]+$/.test(host)) return host;
  const { localAddress, localPort } = req.socket;
  const address = localAddress?.includes(':') ? `[${localAddress}]` : (localAddress ?? '127.0.0.1');
  return `${address}:${localPort}`;
}

/**
 * Header values are ASCII on the wire (Node refuses others, and a line break would end the header): a summary that
 * quotes a user's name keeps its words, with "..." for the cut mark and "?" for anything else; the body has it whole.
 */
function asciiHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers))
    out[name] = value.replaceAll('\u2026', '...').replace(/[^\x20-\x7e]/g, '?');
  return out;
}

export interface Listening {
  server: http.Server;
  url: string;
}

/** Whether an address to bind reaches only this machine. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Starts listening; binds to loopback unless told otherwise. Port 0 picks a free port. */
export function listen(
  ws: Workspace,
  host = '127.0.0.1',
  port = 8085,
  options: ServerOptions = {},
): Promise<Listening> {
  const server = createServer(ws, options);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const addr = server.address();
      const actualPort = typeof addr === 'object' && addr ? addr.port : port;
      const shownHost = host.includes(':') ? `[${host}]` : host;
      resolve({ server, url: `${options.tls ? 'https' : 'http'}://${shownHost}:${actualPort}` });
    });
  });
}
