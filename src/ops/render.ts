/**
 * Renders an outcome as the body of an answer, in XML or JSON: the one place that decides what a response looks
 * like, for serve mode and for the CLI alike.
 */
import { encodeDocument, encodeEnvelope, encodeError, encodeXmlList } from '../model/codec.js';
import type { Format } from '../model/schema.js';
import { envelopeOf, type Answered, type Failed, type Outcome } from './operation.js';

export interface Rendered {
  status: number;
  mediaType: string;
  body: string;
  headers: Record<string, string>;
}

export const MEDIA_TYPES: Record<Format, string> = { json: 'application/json', xml: 'application/xml' };

export function render(outcome: Outcome, format: Format): Rendered {
  return outcome.ok ? renderReply(outcome, format) : renderFailure(outcome, format);
}

function renderReply(outcome: Answered, format: Format): Rendered {
  const { op, reply, status } = outcome;
  if (reply.kind === 'notModified') return { status, mediaType: MEDIA_TYPES[format], body: '', headers: {} };
  const headers: Record<string, string> = { ...(reply.headers ?? {}) };
  if (reply.location !== undefined) headers.Location = reply.location;
  switch (reply.kind) {
    case 'envelope': {
      if (typeof op.reply !== 'object') throw new Error(`${op.name} answered an envelope it does not declare`);
      const body = encodeEnvelope(envelopeOf(outcome), op.reply.envelope, format);
      return { status, mediaType: MEDIA_TYPES[format], body, headers };
    }
    case 'json': {
      if (format === 'xml' && reply.schema) {
        const { schema, value } = reply;
        const body = reply.many
          ? encodeXmlList(schema, value as unknown[], `${schema.xml}s`)
          : encodeDocument(schema, value, 'xml');
        return { status, mediaType: MEDIA_TYPES.xml, body, headers };
      }
      const text = reply.compact && reply.text !== undefined ? reply.text : undefined;
      const body = `${text ?? JSON.stringify(reply.value, null, reply.compact ? undefined : 2)}\n`;
      return { status, mediaType: MEDIA_TYPES.json, body, headers };
    }
    case 'text':
      headers['Content-Disposition'] = `attachment; filename="${reply.filename}"`;
      return { status, mediaType: reply.mediaType, body: reply.body, headers };
    case 'done':
      return { status, mediaType: MEDIA_TYPES[format], body: '', headers };
  }
}

function renderFailure(outcome: Failed, format: Format): Rendered {
  const { status, error, op } = outcome;
  switch (op?.errors) {
    case 'envelope':
      if (typeof op.reply !== 'object') throw new Error(`${op.name} has envelope errors but no envelope`);
      return {
        status,
        mediaType: MEDIA_TYPES[format],
        body: encodeEnvelope(envelopeOf(outcome), op.reply.envelope, format),
        headers: {},
      };
    case 'puppetdb':
      // PuppetDB's conventions: a missing parent is a JSON error object, anything else a one-line text.
      if (status === 404)
        return { status, mediaType: MEDIA_TYPES.json, body: `${JSON.stringify({ error })}\n`, headers: {} };
      return { status, mediaType: 'text/plain', body: `${error}\n`, headers: {} };
    case 'puppetdb-command':
      // PuppetDB's command endpoint answers every refusal as a JSON object, which the Puppet terminus parses.
      return { status, mediaType: MEDIA_TYPES.json, body: `${JSON.stringify({ error })}\n`, headers: {} };
    case 'json':
      return { status, mediaType: MEDIA_TYPES.json, body: encodeError(status, error, 'json'), headers: {} };
    default:
      // 'document', and failures before any operation was found (a malformed target, an unknown path).
      return { status, mediaType: MEDIA_TYPES[format], body: encodeError(status, error, format), headers: {} };
  }
}
