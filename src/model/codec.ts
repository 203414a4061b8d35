/**
 * Documents in and out: safe XML parsing with fast-xml-parser, JSON, format detection, and the `/adp` response
 * envelope (`{links, content}` in JSON, `<entities>` with `<link>` and `<content>` in XML).
 */
import { createRequire } from 'node:module';
import type * as FastXmlParser from 'fast-xml-parser';
import { badRequest } from './errors.js';
import { MAX_DEPTH, MAX_DOCUMENT_BYTES } from './limits.js';
import { Reporter, decodeValue, toJson, toXmlTree, valueOf, type Format, type ObjectType } from './schema.js';

/** Throws a 400 when a parsed JSON value nests deeper than MAX_DEPTH (checked without recursion). */
export function checkDepth(value: unknown, what: string): void {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > MAX_DEPTH) throw badRequest(`${what}: nested deeper than ${MAX_DEPTH} levels`);
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Bytes as UTF-8 text; invalid UTF-8 is refused, never replaced by U+FFFD. A leading BOM is dropped. */
export function decodeUtf8(bytes: Uint8Array, what: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw badRequest(`${what} is not valid UTF-8`);
  }
}

export function detectFormat(text: string): Format | undefined {
  const first = text.trimStart()[0];
  if (first === '<') return 'xml';
  if (first === '{' || first === '[') return 'json';
  return undefined;
}

/**
 * fast-xml-parser, loaded on the first XML document: its CommonJS bundle through require takes a quarter of the time
 * of its ES module files, and commands that never meet XML do not load it at all.
 */
let xml:
  | { parser: FastXmlParser.XMLParser; builder: FastXmlParser.XMLBuilder; validator: typeof FastXmlParser.XMLValidator }
  | undefined;
function xmlLibrary(): NonNullable<typeof xml> {
  if (xml) return xml;
  const lib = createRequire(import.meta.url)('fast-xml-parser') as typeof FastXmlParser;
  xml = {
    parser: new lib.XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: '@_',
      textNodeName: '#text',
      parseTagValue: false,
      parseAttributeValue: false,
      ignoreDeclaration: true,
      ignorePiTags: true,
      trimValues: true,
      maxNestedTags: MAX_DEPTH,
    }),
    builder: new lib.XMLBuilder({
      ignoreAttributes: false,
      attributeNamePrefix: '@_',
      textNodeName: '#text',
      format: true,
      indentBy: '  ',
      suppressBooleanAttributes: false,
      suppressEmptyNode: true,
    }),
    validator: lib.XMLValidator,
  };
  return xml;
}

/** Parses untrusted XML: size-limited, no DOCTYPE (hence no external entities and no entity expansion), well-formed. */
export function parseXml(text: string): Record<string, unknown> {
  if (Buffer.byteLength(text) > MAX_DOCUMENT_BYTES)
    throw badRequest(`document larger than ${MAX_DOCUMENT_BYTES} bytes`);
  if (/<!DOCTYPE/i.test(text)) throw badRequest('XML: a DOCTYPE is not accepted (no DTDs or entities)');
  const { parser, validator } = xmlLibrary();
  const valid = validator.validate(text);
  if (valid !== true) throw badRequest(`XML: ${valid.err.msg} (line ${valid.err.line}, column ${valid.err.col})`);
  try {
    return parser.parse(text) as Record<string, unknown>;
  } catch (e) {
    const deep = /nested/i.test((e as Error).message);
    throw badRequest(deep ? `XML: nested deeper than ${MAX_DEPTH} levels` : `XML: ${(e as Error).message}`);
  }
}

export function parseJson(text: string): unknown {
  if (Buffer.byteLength(text) > MAX_DOCUMENT_BYTES)
    throw badRequest(`document larger than ${MAX_DOCUMENT_BYTES} bytes`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw badRequest(`JSON: ${(e as Error).message}`);
  }
  checkDepth(value, 'JSON');
  return value;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The single root element of a parsed XML document. */
function xmlRoot(tree: Record<string, unknown>): [string, unknown] {
  const roots = Object.entries(tree).filter(([k]) => !k.startsWith('?') && !k.startsWith('#'));
  if (roots.length !== 1) throw badRequest('XML: expected exactly one root element');
  return roots[0]!;
}

/**
 * Decodes a document of one resource type. An `/adp` response envelope around it is unwrapped, so that what one
 * command prints can be fed to the next.
 */
export function decodeDocument<T>(type: ObjectType<T>, text: string, format?: Format): T {
  const fmt = format ?? detectFormat(text);
  if (!fmt) throw badRequest(`expected an XML or JSON ${type.name} document`);
  const report = new Reporter();
  let value: unknown;
  if (fmt === 'xml') {
    let [root, body] = xmlRoot(parseXml(text));
    if (root === 'entities' && isRecord(body)) {
      const content = Array.isArray(body.content) ? body.content[0] : body.content;
      if (!isRecord(content)) throw badRequest(`XML: the envelope holds no ${type.xml}`);
      [root, body] = xmlRoot(content);
    }
    if (root !== type.xml) throw badRequest(`XML: expected a <${type.xml}> document, got <${root}>`);
    value = decodeValue(type, body, 'xml', type.name, report);
  } else {
    let json = parseJson(text);
    if (isRecord(json) && Array.isArray(json.content) && 'links' in json) json = json.content[0];
    if (isRecord(json)) {
      const keys = Object.keys(json);
      const wrapped = keys.length === 1 && [type.name, type.xml].includes(keys[0]!) && isRecord(json[keys[0]!]);
      if (wrapped) json = json[keys[0]!];
    }
    value = decodeValue(type, json, 'json', type.name, report);
  }
  report.throwIfFailed();
  return valueOf(type, value);
}

/** Encodes one resource as a whole document in the given format. */
export function encodeDocument<T>(type: ObjectType<T>, value: T, format: Format): string {
  if (format === 'json') return `${JSON.stringify(toJson(type, value), null, 2)}\n`;
  return buildXml({ [type.xml]: toXmlTree(type, value) });
}

/** Encodes a list of resources as XML: the items inside one element named `list`. */
export function encodeXmlList<T>(type: ObjectType<T>, values: readonly T[], list: string): string {
  return buildXml({ [list]: { [type.xml]: values.map((v) => toXmlTree(type, v)) } });
}

export function buildXml(tree: Record<string, unknown>): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n${xmlLibrary().builder.build(tree) as string}`;
}

// ---- the /adp envelope -------------------------------------------------------------------------------------------

export interface Link {
  rel: string;
  href: string;
  title?: string;
  type?: string;
}

/** What an envelope's content items are: ids, lists of ids, resources, or lists of resources. */
export type ContentType = { item: 'id' } | { item: 'ids' } | { item: ObjectType; many?: boolean };

export interface Envelope {
  links: Link[];
  content: unknown[];
  /** Set on failed reads and creates, which answer with the envelope kind of their success (interface section 7). */
  error?: { status: number; message: string };
}

function contentItemJson(type: ContentType, item: unknown): unknown {
  if (type.item === 'id' || type.item === 'ids') return item;
  const t = type.item;
  return type.many ? (item as unknown[]).map((x) => toJson(t, x)) : toJson(t, item);
}

function contentItemXml(type: ContentType, item: unknown): unknown {
  if (type.item === 'id') return String(item);
  if (type.item === 'ids') return { id: (item as number[]).map(String) };
  const t = type.item;
  const items = type.many ? (item as unknown[]) : [item];
  return { [t.xml]: items.map((x) => toXmlTree(t, x)) };
}

export function encodeEnvelope(envelope: Envelope, type: ContentType, format: Format): string {
  if (format === 'json') {
    const out: Record<string, unknown> = {
      links: envelope.links,
      content: envelope.content.map((item) => contentItemJson(type, item)),
    };
    if (envelope.error) out.error = envelope.error;
    return `${JSON.stringify(out, null, 2)}\n`;
  }
  const entities: Record<string, unknown> = {
    link: envelope.links.map((l) => Object.fromEntries(Object.entries(l).map(([k, v]) => [`@_${k}`, v]))),
    content: envelope.content.map((item) => contentItemXml(type, item)),
  };
  if (envelope.error) entities.error = { '@_status': String(envelope.error.status), '#text': envelope.error.message };
  return buildXml({ entities });
}

/** The body of a failure that has no envelope kind. */
export function encodeError(status: number, message: string, format: Format): string {
  if (format === 'json') return `${JSON.stringify({ error: { status, message } }, null, 2)}\n`;
  return buildXml({ error: { '@_status': String(status), '#text': message } });
}
