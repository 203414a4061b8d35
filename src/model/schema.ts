/**
 * A small declarative schema language for the resources of the interface document. One description per resource
 * drives decoding from XML and JSON (accepting both the interface's and VEREFOO's spellings), validation with a path
 * and a reason, and encoding back to XML or JSON in schema order, so the two formats cannot drift apart.
 */
import { badRequest, quote } from './errors.js';

export type Format = 'xml' | 'json';
export type ScalarType = 'string' | 'int' | 'long' | 'boolean';

/** An enumeration; `V` is the union of its JSON constants. */
export interface EnumType<V extends string = string> {
  kind: 'enum';
  /** Used in messages: `"FIREWAL" is not a functional type`. */
  label: string;
  /** [JSON constant, XML value]; the JSON constant is what the model stores. */
  values: readonly (readonly [V, string])[];
}

/** A resource; `T` is the type of its decoded value, derived from the fields by `obj` in `resources.ts`. */
export interface ObjectType<T = unknown> {
  kind: 'object';
  /** Root name of a JSON document and of validation paths. */
  name: string;
  /** Root element of an XML document. */
  xml: string;
  fields: readonly FieldSpec[];
  /** Checks across fields, run after the fields decoded cleanly. */
  check?: (value: Record<string, unknown>, report: Reporter) => void;
  /** Never set: carries the value type, so that decoding a schema gives its type and nothing else. */
  readonly value?: T;
}

export interface FieldSpec {
  /** Model key, which is also the JSON name. */
  key: string;
  /** XML attribute or element name, when it differs from the key. */
  xml?: string;
  /** Other accepted input spellings. */
  aliases?: readonly string[];
  attr?: boolean;
  list?: boolean;
  required?: boolean;
  /** Read from XML but not written to it: nfv's own field the XSD does not declare (answers keep validating). */
  notInXml?: boolean;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any object type, whatever its value type
  type: ScalarType | EnumType | ObjectType<any>;
}

export type FieldType = FieldSpec['type'];

/** The value a field type decodes to. */
type ValueOf<T> = T extends 'string'
  ? string
  : T extends 'int' | 'long'
    ? number
    : T extends 'boolean'
      ? boolean
      : T extends EnumType<infer V>
        ? V
        : T extends ObjectType<infer O>
          ? O
          : never;
type FieldValue<F extends FieldSpec> = F extends { list: true } ? ValueOf<F['type']>[] : ValueOf<F['type']>;
type Flatten<T> = { [K in keyof T]: T[K] };

/** The value type of an object with these fields: required fields present, the others optional. */
export type ValueOfFields<F extends FieldSpec> = Flatten<
  { [G in F as G extends { required: true } ? G['key'] : never]: FieldValue<G> } & {
    [G in F as G extends { required: true } ? never : G['key']]?: FieldValue<G>;
  }
>;

/** The decoded value type of a resource schema: `TypeOf<typeof NodeType>` is a node. */
export type TypeOf<O> = O extends ObjectType<infer T> ? T : never;

export const enumType = <const J extends string>(
  label: string,
  values: readonly (J | readonly [J, string])[],
): EnumType<J> => ({
  kind: 'enum',
  label,
  values: values.map((v): readonly [J, string] => (typeof v === 'string' ? [v, v] : v)),
});

export interface Issue {
  path: string;
  message: string;
}

/** Collects the first problems of a document; decoding goes on so that several can be reported. */
export class Reporter {
  readonly issues: Issue[] = [];
  constructor(readonly limit = 5) {}
  add(path: string, message: string): void {
    if (this.issues.length < this.limit) this.issues.push({ path, message });
  }
  get failed(): boolean {
    return this.issues.length > 0;
  }
  /** A one-line message: the first problem, and how many others there are. */
  summary(): string {
    const [first, ...rest] = this.issues;
    if (!first) return '';
    const more = rest.length ? ` (and ${rest.length}${rest.length + 1 >= this.limit ? '+' : ''} more)` : '';
    return `${first.path}: ${first.message}${more}`;
  }
  throwIfFailed(): void {
    if (this.failed) throw badRequest(this.summary());
  }
}

const normaliseEnum = (s: string) => s.toUpperCase().replace(/[_\-\s]/g, '');

export function enumValue(type: EnumType, raw: string): string | undefined {
  const wanted = normaliseEnum(raw);
  for (const [json, xml] of type.values) {
    if (normaliseEnum(json) === wanted || normaliseEnum(xml) === wanted) return json;
  }
  return undefined;
}

export const xmlName = (f: FieldSpec) => f.xml ?? f.key;
const namesOf = (f: FieldSpec) => [...new Set([f.key, xmlName(f), ...(f.aliases ?? [])])];

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const INT32 = 2 ** 31;

function decodeScalar(type: ScalarType | EnumType, raw: unknown, path: string, report: Reporter): unknown {
  if (isRecord(raw) && '#text' in raw) raw = raw['#text'];
  if (typeof type === 'object') {
    if (typeof raw !== 'string') return report.add(path, `expected one of ${type.values.map((v) => v[0]).join(', ')}`);
    const v = enumValue(type, raw.trim());
    if (v === undefined) report.add(path, `${quote(raw)} is not ${article(type.label)} ${type.label}`);
    return v;
  }
  switch (type) {
    case 'string':
      if (typeof raw === 'string') return raw;
      if (typeof raw === 'number' || typeof raw === 'boolean') return String(raw);
      if (raw === '' || raw === null) return '';
      return report.add(path, 'expected a string');
    case 'boolean':
      if (typeof raw === 'boolean') return raw;
      if (raw === 'true' || raw === '1') return true;
      if (raw === 'false' || raw === '0') return false;
      return report.add(path, `${quote(raw)} is not a boolean`);
    case 'int':
    case 'long': {
      const n =
        typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*[-+]?\d+\s*$/.test(raw) ? Number(raw) : NaN;
      const ok = Number.isSafeInteger(n) && (type === 'long' || (n >= -INT32 && n < INT32));
      if (!ok) return report.add(path, `${quote(raw)} is not ${type === 'int' ? 'an int32' : 'an int64'}`);
      return n;
    }
  }
}

function article(label: string): string {
  return /^[aeiou]/i.test(label) ? 'an' : 'a';
}

/** Decodes one value of a field type from a parsed XML tree (attributes prefixed `@_`) or from JSON. */
export function decodeValue(type: FieldType, raw: unknown, format: Format, path: string, report: Reporter): unknown {
  if (typeof type === 'string' || type.kind === 'enum') return decodeScalar(type, raw, path, report);
  // An empty XML element (<NodeConstraints/>) parses to ''.
  if (raw === '' || (format === 'json' && raw === null)) raw = {};
  if (!isRecord(raw)) return report.add(path, 'expected an object');
  const out: Record<string, unknown> = {};
  for (const field of type.fields) {
    let found: string | undefined;
    let value: unknown;
    for (const name of namesOf(field)) {
      const keys = format === 'xml' ? (field.attr ? [`@_${name}`] : [name, `@_${name}`]) : [name];
      const key = keys.find((k) => raw[k] !== undefined);
      if (key !== undefined) {
        found = name;
        value = raw[key];
        break;
      }
    }
    const fieldPath = `${path}.${found ?? (format === 'xml' ? xmlName(field) : field.key)}`;
    if (found === undefined || (format === 'json' && value === null)) {
      if (field.required) report.add(fieldPath, field.list ? 'at least one item is required' : 'is required');
      continue;
    }
    if (field.list) {
      const items = Array.isArray(value) ? value : [value];
      if (field.required && items.length === 0) report.add(fieldPath, 'at least one item is required');
      out[field.key] = items.map((item, i) => decodeValue(field.type, item, format, `${fieldPath}[${i}]`, report));
    } else {
      if (Array.isArray(value)) {
        report.add(fieldPath, 'appears more than once');
        continue;
      }
      const decoded = decodeValue(field.type, value, format, fieldPath, report);
      if (decoded !== undefined) out[field.key] = decoded;
    }
  }
  if (!report.failed) type.check?.(out, scoped(report, path));
  return out;
}

/**
 * The decoded value of a resource, as its schema's type. The one cast of decoding: `decodeValue` built the value
 * field by field from this very schema and reported no problem, so it has the type `obj` derived from the fields.
 */
export function valueOf<T>(_type: ObjectType<T>, decoded: unknown): T {
  return decoded as T;
}

/** A reporter view whose paths are relative to `base`. */
function scoped(report: Reporter, base: string): Reporter {
  const view = Object.create(report) as Reporter;
  view.add = (path: string, message: string) => report.add(path ? `${base}.${path}` : base, message);
  return view;
}

/** Encodes a model value as JSON: JSON names, JSON enum constants, schema field order. */
export function toJson(type: FieldType, value: unknown): unknown {
  if (typeof type === 'string' || type.kind === 'enum') return value;
  const obj = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of type.fields) {
    const v = obj[field.key];
    if (v === undefined) continue;
    out[field.key] = field.list ? (v as unknown[]).map((item) => toJson(field.type, item)) : toJson(field.type, v);
  }
  return out;
}

function xmlScalar(type: FieldType, value: unknown): string {
  if (typeof type === 'object' && type.kind === 'enum') {
    return type.values.find(([json]) => json === value)?.[1] ?? String(value);
  }
  return String(value);
}

/** Encodes a model value as a fast-xml-parser tree (attributes prefixed `@_`), elements in schema order. */
export function toXmlTree(type: FieldType, value: unknown): unknown {
  if (typeof type === 'string' || type.kind === 'enum') return xmlScalar(type, value);
  const obj = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of type.fields.filter((f) => f.attr && !f.notInXml)) {
    const v = obj[field.key];
    if (v !== undefined) out[`@_${xmlName(field)}`] = xmlScalar(field.type, v);
  }
  for (const field of type.fields.filter((f) => !f.attr)) {
    const v = obj[field.key];
    if (v === undefined) continue;
    out[xmlName(field)] = field.list
      ? (v as unknown[]).map((item) => toXmlTree(field.type, item))
      : toXmlTree(field.type, v);
  }
  return out;
}
