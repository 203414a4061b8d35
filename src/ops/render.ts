/**
 * Renders an outcome as the body of an answer, in XML or JSON: the one place that decides what a response looks
 * like, for serve mode and for the CLI alike.
 */
import { encodeEnvelope, encodeError } from '../model/codec.js';
import type { Format } from '../model/schema.js';
import { envelopeOf, type Outcome } from './operation.js';

export interface Rendered {
  status: number;
  mediaType: string;
  body: string;
  headers: Record<string, string>;
}

export const MEDIA_TYPES: Record<Format, string> = { json: 'application/json', xml: 'application/xml' };

/** /fwd speaks JSON only (interface document), as do JSON replies; /adp answers in XML or JSON. (/v4 errors come first.) */
const speaksJsonOnly = (outcome: Outcome) => outcome.op?.path.startsWith('/fwd') || outcome.op?.reply === 'json';

export function render(outcome: Outcome, format: Format): Rendered {
  const { op, reply } = outcome;
  const headers = { ...(reply.headers ?? {}) };
  const kind = op?.reply;
  if (kind !== undefined && typeof kind === 'object' && (!outcome.error || outcome.links)) {
    return {
      status: outcome.status,
      mediaType: MEDIA_TYPES[format],
      body: encodeEnvelope(envelopeOf(outcome), kind.envelope, format),
      headers,
    };
  }
  if (outcome.error && outcome.op?.path.startsWith('/v4')) {
    // PuppetDB's conventions: a missing parent is a JSON error object, anything else a one-line text.
    if (outcome.status === 404)
      return {
        status: 404,
        mediaType: MEDIA_TYPES.json,
        body: `${JSON.stringify({ error: outcome.error })}\n`,
        headers,
      };
    return { status: outcome.status, mediaType: 'text/plain', body: `${outcome.error}\n`, headers };
  }
  if (outcome.error) {
    const fmt = speaksJsonOnly(outcome) ? 'json' : format;
    return {
      status: outcome.status,
      mediaType: MEDIA_TYPES[fmt],
      body: encodeError(outcome.status, outcome.error, fmt),
      headers,
    };
  }
  if (reply.text) {
    headers['Content-Disposition'] = `attachment; filename="${reply.text.filename}"`;
    return { status: outcome.status, mediaType: reply.text.mediaType, body: reply.text.body, headers };
  }
  if (kind === 'json') {
    return {
      status: outcome.status,
      mediaType: MEDIA_TYPES.json,
      body: `${JSON.stringify(reply.value, null, reply.compact ? undefined : 2)}\n`,
      headers,
    };
  }
  return { status: outcome.status, mediaType: MEDIA_TYPES[format], body: '', headers };
}
