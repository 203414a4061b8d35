/**
 * Serve mode: an HTTP listener on node:http that routes every request to the operation table, with content
 * negotiation (Content-Type for the body, Accept for the answer) and a body size limit.
 */
import http from 'node:http';
import { MAX_DOCUMENT_BYTES } from '../model/codec.js';
import { NfvError } from '../model/errors.js';
import type { Format } from '../model/schema.js';
import { allowedMethods, execute, type Operation, type Outcome } from '../ops/operation.js';
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

function readBody(req: http.IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new NfvError(413, `request body larger than ${limit} bytes`));
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function createServer(ws: Workspace, table: readonly Operation[] = OPERATIONS, maxBodyBytes = MAX_DOCUMENT_BYTES): http.Server {
  return http.createServer(async (req, res) => {
    const requestFormat = formatOf(req.headers['content-type']);
    const answerFormat = acceptedFormat(req.headers.accept, requestFormat);
    let outcome: Outcome;
    try {
      const body = await readBody(req, maxBodyBytes);
      outcome = await execute(table, ws, { method: req.method ?? 'GET', target: req.url ?? '/', body: body || undefined, format: requestFormat });
    } catch (e) {
      const status = e instanceof NfvError ? e.status : 500;
      outcome = { status, reply: {}, error: (e as Error).message };
    }
    const rendered = render(outcome, answerFormat);
    const noBody = rendered.status === 304 || rendered.status === 204 || rendered.body === '';
    res.writeHead(rendered.status, {
      ...rendered.headers,
      ...(noBody ? {} : { 'Content-Type': `${rendered.mediaType}; charset=utf-8`, 'Content-Length': Buffer.byteLength(rendered.body) }),
      ...(outcome.status === 405 ? { Allow: allowedMethods(table, new URL(req.url ?? '/', 'http://nfv.invalid').pathname).join(', ') } : {}),
    });
    res.end(noBody ? undefined : rendered.body);
  });
}

export interface Listening {
  server: http.Server;
  url: string;
}

/** Starts listening; binds to loopback unless told otherwise. Port 0 picks a free port. */
export function listen(ws: Workspace, host = '127.0.0.1', port = 8085): Promise<Listening> {
  const server = createServer(ws);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const addr = server.address();
      const actualPort = typeof addr === 'object' && addr ? addr.port : port;
      const shownHost = host.includes(':') ? `[${host}]` : host;
      resolve({ server, url: `http://${shownHost}:${actualPort}` });
    });
  });
}
