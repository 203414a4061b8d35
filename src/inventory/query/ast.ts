/**
 * PuppetDB's v4 query language (AST in prefix notation): parsed and checked against the fields and operators of an
 * entity, then compiled into a predicate over rows with SQL's three-valued logic (a comparison with null is
 * unknown, `not` of unknown is unknown, and a row is kept only when the predicate is true). Errors are 400s with
 * PuppetDB's one-line messages.
 */
import { RE2JS, RE2JSSyntaxException } from 're2js';
import { MAX_MESSAGE, NfvError, badRequest, clip, listWithin, quote } from '../../model/errors.js';
import { checkDepth } from '../../model/codec.js';
import { MAX_REGEX_LENGTH } from '../../model/limits.js';
import { ENTITIES, indexOf, type Entity, type Field, type Index } from '../entities.js';
import type { InventoryData } from '../ingest.js';
import { page, parsePaging, sortRows, type Paging } from '../paging.js';
import { canonicalJson, parseInstant, text } from '../values.js';

export type Truth = boolean | null;
export type Predicate = (row: any) => Truth;

/** `head` followed by the names, listed within what is left of the longest message. */
const withNames = (head: string, names: string[]) => head + listWithin(names, MAX_MESSAGE - head.length);

const queryableNames = (e: Entity) =>
  Object.keys(e.fields)
    .filter((k) => !e.fields[k]!.answerOnly)
    .sort();
const extractableNames = (e: Entity) =>
  Object.keys(e.fields)
    .filter((k) => !e.fields[k]!.filterOnly)
    .sort();

/**
 * A field as used in a query: regular, `["parameter", name]`, dotted `parameters.a.b` or `facts.a[0]`, or
 * `node_state`.
 */
interface QueryField {
  name: string;
  kind: Field['kind'] | 'parameter' | 'dotted';
  get: (row: any) => unknown;
}

/** `parameters.a."b.c"` -> ['a', 'b.c']; `facts.a.b[0]` -> ['a', 'b', '0'] (the prefix is left out). */
export function dottedPath(name: string): string[] {
  const rest = name.slice(name.indexOf('.') + 1);
  const parts: string[] = [];
  for (const m of rest.matchAll(/"((?:[^"\\]|\\.)*)"|([^.]+)/g)) {
    if (m[1] !== undefined) {
      parts.push(m[1].replace(/\\(.)/g, '$1'));
      continue;
    }
    const index = /^(.*)\[(\d+)\]$/.exec(m[2]!);
    if (index) parts.push(index[1]!, index[2]!);
    else parts.push(m[2]!);
  }
  return parts;
}

/** The dotted field a name is on this entity (`facts.os.family` on inventory): the JSON field it descends into. */
export function dottedField(entity: Entity, name: string): string | undefined {
  const dot = name.indexOf('.');
  if (dot <= 0 || !entity.dotted) return undefined;
  return entity.dotted[name.slice(0, dot)];
}

const MISSING = Symbol('missing');
/** The value at a path of object keys and array places (as jsonb's #> finds it), or MISSING. */
function atPath(value: unknown, path: string[]): unknown {
  let v = value;
  for (const k of path) {
    if (Array.isArray(v) && /^\d+$/.test(k) && Number(k) < v.length) v = v[Number(k)];
    else if (typeof v !== 'object' || v === null || Array.isArray(v) || !Object.hasOwn(v, k)) return MISSING;
    else v = (v as Record<string, unknown>)[k];
  }
  return v;
}

/** A resource parameter's value, or MISSING when the resource has none of that name. */
const parameter =
  (name: string) =>
  (row: any): unknown =>
    Object.hasOwn(row.parameters, name) ? row.parameters[name] : MISSING;

/**
 * `node_state` (active, inactive or any), which PuppetDB accepts on every entity with a certname without listing it:
 * a resource's own flag, else whether the row's node is deactivated.
 */
function nodeState(entity: Entity, index: Index): QueryField {
  if (entity.name === 'resources') return { name: 'node_state', kind: 'node_state', get: (row) => row.active };
  const certname = entity.fields.certname!.get;
  return { name: 'node_state', kind: 'node_state', get: (row) => !index.inactiveNodes.has(certname(row) as string) };
}

function queryField(c: Pick<Compiler, 'entity' | 'index'>, raw: unknown, purpose: 'query' | 'in'): QueryField {
  const { entity } = c;
  if (Array.isArray(raw) && raw[0] === 'parameter' && entity.name === 'resources' && typeof raw[1] === 'string') {
    return { name: `parameter ${raw[1]}`, kind: 'parameter', get: parameter(raw[1]) };
  }
  if (Array.isArray(raw) && raw[0] === 'fact' && entity.name === 'nodes' && typeof raw[1] === 'string') {
    // `["fact", name]` on nodes (the Puppet terminus's facts search): the value of that fact of the node.
    const name = raw[1];
    const facts = new Map(c.index.factsets.map((s) => [s.certname, s.values]));
    return {
      name: `fact ${name}`,
      kind: 'dotted',
      get: (row) => {
        const values = facts.get(row.certname);
        return values && Object.hasOwn(values, name) ? values[name] : MISSING;
      },
    };
  }
  if (typeof raw !== 'string') throw badRequest(`${quote(raw)} is not a valid field`);
  const json = dottedField(entity, raw);
  if (json) {
    const path = dottedPath(raw);
    const get = entity.fields[json]!.get;
    return { name: raw, kind: 'dotted', get: (row) => atPath(get(row), path) };
  }
  if (raw === 'node_state' && entity.fields.certname) return nodeState(entity, c.index);
  const field = entity.fields[raw];
  if (!field || field.answerOnly) {
    const head =
      purpose === 'in'
        ? `Can't match on unknown '${entity.name}' field '${clip(raw)}' for 'in'. Acceptable fields are `
        : `'${clip(raw)}' is not a queryable object for ${entity.name}. Known queryable objects are `;
    throw badRequest(withNames(head, queryableNames(entity)));
  }
  return { name: raw, kind: field.kind, get: field.get };
}

/** `["parameter", name]` and `["fact", name]`: one field written as a list (not a list of fields for `in`). */
export const isFieldForm = (v: unknown[]) => v[0] === 'parameter' || v[0] === 'fact';

/** A compiled query regular expression. */
export interface Matcher {
  test(text: string): boolean;
}

/** Distinct texts whose answers one query remembers (certnames, types, environments repeat across many rows). */
const MEMO_LIMIT = 100_000;

/** A matcher that remembers its answer per distinct text, so a scan pays RE2's cost once per distinct value. */
function remembering(m: Matcher): Matcher {
  const seen = new Map<string, boolean>();
  return {
    test(text: string): boolean {
      let hit = seen.get(text);
      if (hit === undefined) {
        hit = m.test(text);
        if (seen.size < MEMO_LIMIT) seen.set(text, hit);
      }
      return hit;
    },
  };
}

/**
 * PostgreSQL advanced regular expressions, for what users meet ((?i), \m \M \y, bracket rules), run by RE2 (re2js):
 * matching takes time linear in the text whatever the pattern, so no query can freeze the server by backtracking.
 * What RE2 does not have (backreferences, lookaround) is refused with a 400.
 */
export function pgRegex(pattern: string): Matcher {
  const fail = (why: string) => badRequest(`ERROR: invalid regular expression: ${why}`);
  if (pattern.length > MAX_REGEX_LENGTH) throw fail(`longer than ${MAX_REGEX_LENGTH} characters`);
  let flags = 0;
  let p = pattern;
  if (p.startsWith('(?i)')) {
    flags = RE2JS.CASE_INSENSITIVE;
    p = p.slice(4);
  }
  if (/^[*+?{]/.test(p)) throw fail('quantifier operand invalid');
  let out = '';
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '\\') {
      const n = p[i + 1];
      if (n === undefined) throw fail('invalid escape \\ sequence');
      out += n === 'm' || n === 'M' || n === 'y' ? '\\b' : `\\${n}`;
      i++;
      continue;
    }
    if (c === '[') {
      // In POSIX brackets a ] right after [ or [^ is a literal, and backslashes are literal too.
      let j = i + 1;
      let cls = '[';
      if (p[j] === '^') {
        cls += '^';
        j++;
      }
      if (p[j] === ']') {
        cls += '\\]';
        j++;
      }
      while (j < p.length && p[j] !== ']') {
        cls += p[j] === '\\' ? '\\\\' : p[j];
        j++;
      }
      if (j >= p.length) throw fail('brackets [] not balanced');
      out += `${cls}]`;
      i = j;
      continue;
    }
    out += c;
  }
  try {
    return remembering(RE2JS.compile(out, flags));
  } catch (e) {
    const why = e instanceof RE2JSSyntaxException ? e.getDescription() : (e as Error).message;
    throw fail(clip(why));
  }
}

/** A user's value as PuppetDB shows it in a message (a string as it is, else JSON), cut. */
const show = (v: unknown) => clip(text(v));

function timestampValue(v: unknown): number {
  const ms = parseInstant(v);
  if (ms === undefined) throw badRequest(`'${show(v)}' is not a valid timestamp value`);
  return ms;
}

// Two-argument forms are unrolled: they are the common case and the loop costs a third of a scan.
const and = (parts: Predicate[]): Predicate => {
  if (parts.length === 1) return parts[0]!;
  if (parts.length === 2) {
    const [a, b] = parts as [Predicate, Predicate];
    return (row) => {
      const x = a(row);
      if (x === false) return false;
      const y = b(row);
      if (y === false) return false;
      return x === null || y === null ? null : true;
    };
  }
  return (row) => {
    let unknown = false;
    for (const p of parts) {
      const v = p(row);
      if (v === false) return false;
      if (v === null) unknown = true;
    }
    return unknown ? null : true;
  };
};
const or = (parts: Predicate[]): Predicate => {
  if (parts.length === 1) return parts[0]!;
  if (parts.length === 2) {
    const [a, b] = parts as [Predicate, Predicate];
    return (row) => {
      const x = a(row);
      if (x === true) return true;
      const y = b(row);
      if (y === true) return true;
      return x === null || y === null ? null : false;
    };
  }
  return (row) => {
    let unknown = false;
    for (const p of parts) {
      const v = p(row);
      if (v === true) return true;
      if (v === null) unknown = true;
    }
    return unknown ? null : false;
  };
};

export interface Compiler {
  entity: Entity;
  index: Index;
  /** Field names the query mentions (default restrictions apply only when it does not). */
  mentions: Set<string>;
}

function equality(c: Compiler, f: QueryField, value: unknown): Predicate {
  const { get } = f;
  if (value === null && f.kind !== 'json' && f.kind !== 'parameter' && f.kind !== 'dotted' && f.kind !== 'value')
    return (row) => get(row) === null;
  switch (f.kind) {
    case 'string':
      if (typeof value !== 'string')
        throw badRequest(`Argument "${show(value)}" is incompatible with string field "${clip(f.name)}".`);
      return (row) => {
        const v = get(row);
        return v === null ? null : v === value;
      };
    case 'number':
      if (typeof value !== 'number')
        throw badRequest(`Argument "${show(value)}" is incompatible with numeric field "${clip(f.name)}".`);
      return (row) => {
        const v = get(row);
        return v === null ? null : v === value;
      };
    case 'timestamp': {
      const ms = timestampValue(value);
      return (row) => {
        const v = get(row);
        return v === null ? null : v === ms;
      };
    }
    case 'boolean':
    case 'latest': {
      const b = f.kind === 'latest' && typeof value === 'string' ? value.toLowerCase() === 'true' : value;
      if (typeof b !== 'boolean')
        throw badRequest(`Argument "${show(value)}" is incompatible with boolean field "${clip(f.name)}".`);
      return (row) => {
        const v = get(row);
        return v === null ? null : v === b;
      };
    }
    case 'array':
    case 'tag': {
      if (typeof value !== 'string')
        throw badRequest(`Argument "${show(value)}" is incompatible with array field "${clip(f.name)}".`);
      const wanted = f.kind === 'tag' ? value.toLowerCase() : value;
      return (row) => {
        const v = get(row) as string[] | null;
        return v === null ? null : v.includes(wanted);
      };
    }
    case 'node_state': {
      const state = text(value).toLowerCase();
      if (!['active', 'inactive', 'any'].includes(state))
        throw badRequest(`node_state: '${show(value)}' is not active, inactive or any`);
      return (row) => state === 'any' || (state === 'active') === get(row);
    }
    case 'path': {
      if (!Array.isArray(value))
        throw badRequest(`Argument "${show(value)}" is incompatible with path field "${clip(f.name)}".`);
      const wanted = canonicalJson(value);
      return (row) => canonicalJson(get(row)) === wanted;
    }
    case 'parameter':
    case 'dotted':
    case 'json':
    case 'value':
    case 'parameters': {
      // Deep equality of JSON values; a scalar needs no canonical text.
      if (value === null || typeof value !== 'object') return (row) => get(row) === value;
      const text = canonicalJson(value);
      return (row) => {
        const v = get(row);
        return v !== MISSING && typeof v === 'object' && v !== null && canonicalJson(v) === text;
      };
    }
  }
}

function inequality(f: QueryField, op: string, value: unknown): Predicate {
  const cmp: (a: number, b: number) => boolean =
    op === '<' ? (a, b) => a < b : op === '>' ? (a, b) => a > b : op === '<=' ? (a, b) => a <= b : (a, b) => a >= b;
  let bound: number;
  if (f.kind === 'number' || f.kind === 'dotted' || f.kind === 'value') {
    if (typeof value !== 'number')
      throw badRequest(`Argument "${show(value)}" and operator "${op}" have incompatible types.`);
    bound = value;
  } else if (f.kind === 'timestamp') bound = timestampValue(value);
  else throw badRequest(`Query operators >,>=,<,<= are not allowed on field ${clip(f.name)}`);
  return (row) => {
    const v = f.get(row);
    return typeof v === 'number' ? cmp(v, bound) : null;
  };
}

function regexMatch(f: QueryField, value: unknown): Predicate {
  if (typeof value !== 'string') throw badRequest('Invalid ~ clause');
  switch (f.kind) {
    case 'string': {
      const re = pgRegex(value);
      return (row) => {
        const v = f.get(row) as string | null;
        return v === null ? null : re.test(v);
      };
    }
    case 'array':
    case 'tag': {
      const re = pgRegex(f.kind === 'tag' ? value.toLowerCase() : value);
      return (row) => {
        const v = f.get(row) as string[] | null;
        return v === null ? null : v.some((x) => re.test(x));
      };
    }
    case 'parameter':
    case 'json': {
      // PuppetDB JSON-encodes the pattern too, so it must cover a whole JSON string token (a quirk kept on purpose).
      const re = pgRegex(JSON.stringify(value));
      return (row) => {
        const v = f.get(row);
        return v === MISSING ? false : re.test(canonicalJson(v));
      };
    }
    case 'dotted':
    case 'value': {
      const re = pgRegex(value);
      return (row) => {
        const v = f.get(row);
        if (v === MISSING || v === null) return null;
        return re.test(typeof v === 'string' ? v : canonicalJson(v));
      };
    }
    default:
      throw badRequest(`Query operator ~ is not allowed on field ${clip(f.name)}`);
  }
}

/** `~>`: a path whose components match the patterns, one each (PuppetDB's regexp array match). */
function pathMatch(f: QueryField, value: unknown): Predicate {
  if (f.kind !== 'path') throw badRequest(`Query operator ~> is not allowed on field ${clip(f.name)}`);
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
    throw badRequest('~> takes an array of regular expressions');
  const res = value.map((v) => pgRegex(v as string));
  return (row) => {
    const path = f.get(row) as unknown[];
    return path.length === res.length && res.every((re, k) => re.test(String(path[k])));
  };
}

function nullCheck(f: QueryField, value: unknown): Predicate {
  if (typeof value !== 'boolean') throw badRequest(`null? takes a boolean, not ${show(value)}`);
  if (f.kind === 'json') return () => false; // PuppetDB compares the JSON text with SQL NULL: never true (quirk kept)
  if (f.kind === 'dotted' || f.kind === 'parameter' || f.kind === 'value') {
    return (row) => {
      const v = f.get(row);
      return v === MISSING ? false : (v === null) === value;
    };
  }
  return (row) => (f.get(row) === null) === value;
}

/** Entities related implicitly: which outer field matches which inner one. */
export function implicitJoin(outer: Entity, inner: Entity): [string, string] {
  if (outer.name === 'events' && inner.name === 'reports') return ['report', 'hash'];
  if (outer.name === 'reports' && inner.name === 'events') return ['hash', 'report'];
  if (outer.fields.certname && inner.fields.certname) return ['certname', 'certname'];
  if (outer.name === 'environments' && inner.fields.environment) return ['name', 'environment'];
  throw badRequest(`No implicit relationship for entity '${inner.name}'`);
}

export function entityNamed(name: unknown): Entity {
  const e = typeof name === 'string' ? ENTITIES[name] : undefined;
  if (!e) throw badRequest(`No implicit relationship for entity '${show(name)}'`);
  return e;
}

/** The paging clauses a `from` may end with. */
export const isPagingClause = (c: unknown): c is unknown[] =>
  Array.isArray(c) && (c[0] === 'limit' || c[0] === 'offset' || c[0] === 'order_by');

export const FROM_SHAPE =
  'Your `from` query accepts an optional query only as a second argument. Check your query and try again.';

/**
 * The paging clauses of a `from` (`["limit", n]`, `["offset", n]`, `["order_by", [f | [f, "desc"], ...]]`) as the
 * URL parameters that say the same, so that they are checked by parsePaging with PuppetDB's messages.
 */
export function pagingClauses(clauses: unknown[]): URLSearchParams {
  const params = new URLSearchParams();
  if (!clauses.every(isPagingClause)) throw badRequest(FROM_SHAPE);
  for (const name of ['limit', 'offset', 'order_by']) {
    const found = clauses.filter((c) => c[0] === name);
    if (found.length > 1) throw badRequest(`Multiple '${name}' clauses are not permitted`);
    if (found.length === 0) continue;
    const value = found[0]![1];
    if (value === undefined || value === null || value === false)
      throw badRequest(`Received '${name}' clause without an argument`);
    if (name !== 'order_by') {
      params.set(name, text(value));
      continue;
    }
    const fields = Array.isArray(value) ? value : [];
    const order = fields.map((o) =>
      typeof o === 'string'
        ? { field: o }
        : Array.isArray(o) && o.length === 2 && typeof o[0] === 'string'
          ? { field: o[0], order: o[1] }
          : undefined,
    );
    if (!Array.isArray(value) || order.includes(undefined))
      throw badRequest(`Illegal value '${show(value)}' for :order_by; expected fields or [field, "asc"|"desc"] pairs`);
    params.set('order_by', JSON.stringify(order));
  }
  return params;
}

/**
 * A subquery of `in`: the entity it selects from, the fields it extracts, its criteria and, for a `from`, its paging
 * (checked).
 */
export function subqueryParts(node: unknown): { entity: Entity; names: string[]; where: unknown; paging?: Paging } {
  if (!Array.isArray(node)) throw badRequest(`${quote(node)} is not a valid subquery`);
  let entity: Entity;
  let fields: unknown;
  let where: unknown;
  let paging: Paging | undefined;
  const head = text(node[0]).toLowerCase();
  if (head === 'extract') {
    const select = node[2];
    if (!Array.isArray(select) || typeof select[0] !== 'string' || !select[0].startsWith('select_')) {
      throw badRequest('extract in a subquery needs ["select_<entity>", query]');
    }
    entity = entityNamed(select[0].slice('select_'.length));
    fields = node[1];
    where = select[1];
  } else if (head === 'from') {
    entity = entityNamed(node[1]);
    const inner = node[2];
    if (!Array.isArray(inner) || text(inner[0]).toLowerCase() !== 'extract')
      throw badRequest('from in an in clause needs an extract');
    fields = inner[1];
    where = inner[2];
    if (node.length > 3) paging = parsePaging(pagingClauses(node.slice(3)), entity.orderable);
  } else throw badRequest(`${quote(node[0])} is not a valid subquery for 'in'`);
  const names = Array.isArray(fields) ? fields : [fields];
  const unknown = names.filter((n) => typeof n !== 'string' || !entity.fields[n] || entity.fields[n]!.filterOnly);
  if (unknown.length) throw badRequest(extractError(entity, unknown));
  return { entity, names: names as string[], where, paging };
}

/** The tuples a subquery extracts, as canonical JSON keys of the fields' raw values. */
function extractedTuples(index: Index, node: unknown): { width: number; keys: Set<string> } {
  const { entity, names, where, paging } = subqueryParts(node);
  const getters = names.map((n) => entity.fields[n]!.get);
  const keys = new Set<string>();
  let rows = select(compileFilter(entity, index, where));
  if (paging)
    rows = page(
      sortRows(rows, paging.orderBy, (row, f) => entity.fields[f]!.get(row)),
      paging,
    ).rows;
  for (const row of rows) keys.add(canonicalJson(getters.map((g) => g(row))));
  return { width: names.length, keys };
}

function extractError(entity: Entity, unknown: unknown[]): string {
  // Room for one cut name and a count of the others, the rest for the acceptable fields.
  const names = unknown.map((n) => (typeof n === 'string' ? n : show(n)));
  const what = `${names.length === 1 ? 'field' : 'fields'} ${listWithin(names, 140)}`;
  return withNames(`Can't extract unknown '${entity.name}' ${what}. Acceptable fields are `, extractableNames(entity));
}

function membership(c: Compiler, node: unknown[]): Predicate {
  if (node.length !== 3) throw badRequest('in requires exactly two arguments');
  const rawFields = Array.isArray(node[1]) && !isFieldForm(node[1]) ? node[1] : [node[1]];
  const fields = rawFields.map((f) => queryField(c, f, 'in'));
  fields.forEach((f) => c.mentions.add(f.name));
  const sub = node[2];
  if (Array.isArray(sub) && text(sub[0]).toLowerCase() === 'array') {
    if (fields.length !== 1) throw badRequest('in with an array takes one field');
    const f = fields[0]!;
    if (f.kind === 'array' || f.kind === 'tag') throw badRequest('Operator in...array is not supported on array types');
    const values = sub[1];
    if (!Array.isArray(values)) throw badRequest('array takes a list of values');
    return or(values.map((v) => equality(c, f, v)));
  }
  const { width, keys } = extractedTuples(c.index, sub);
  if (width !== fields.length) throw badRequest(`in: ${fields.length} fields cannot match ${width} extracted fields`);
  return (row) => keys.has(canonicalJson(fields.map((f) => f.get(row))));
}

function compileNode(c: Compiler, node: unknown): Predicate {
  if (!Array.isArray(node) || node.length === 0 || typeof node[0] !== 'string')
    throw badRequest(`${quote(node)} is not a valid query`);
  const op = node[0].toLowerCase();
  const args = node.slice(1);
  switch (op) {
    case 'and':
    case 'or':
      if (args.length === 0) throw badRequest(`'${op}' takes at least one argument, but none were supplied`);
      return (op === 'and' ? and : or)(args.map((a) => compileNode(c, a)));
    case 'not': {
      if (args.length !== 1) throw badRequest(`'not' takes exactly one argument, but ${args.length} were supplied`);
      const p = compileNode(c, args[0]);
      return (row) => {
        const v = p(row);
        return v === null ? null : !v;
      };
    }
    case '=':
    case '<':
    case '>':
    case '<=':
    case '>=':
    case '~':
    case '~>':
    case 'null?': {
      if (args.length !== 2) throw badRequest(`${op} requires exactly two arguments`);
      const f = queryField(c, args[0], 'query');
      c.mentions.add(f.name);
      if (op === '=') return equality(c, f, args[1]);
      if (op === '~') return regexMatch(f, args[1]);
      if (op === 'null?') return nullCheck(f, args[1]);
      if (op === '~>') return pathMatch(f, args[1]);
      return inequality(f, op, args[1]);
    }
    case 'in':
      return membership(c, node);
    case 'subquery': {
      // PQL's `nodes { reports { } }` gives ["subquery", "reports"]: no criteria.
      if (args.length !== 1 && args.length !== 2) throw badRequest('subquery requires an entity and a query');
      const inner = entityNamed(args[0]);
      const [outerField, innerField] = implicitJoin(c.entity, inner);
      return membership(c, ['in', outerField, ['from', inner.name, ['extract', innerField, args[1]]]]);
    }
    default:
      throw badRequest(`'${clip(node[0])}' is not a known query operator`);
  }
}

/**
 * Default restrictions: rows of active nodes only on the entities that say so (for resources as a smaller row set,
 * not a test per row); reports of agent runs only. They apply unless the query mentions node_state or type.
 */
function withDefaults(c: Compiler, p: Predicate): Filter {
  const all = c.entity.rows(c.index);
  if (c.entity.activeOnly && !c.mentions.has('node_state')) {
    if (c.entity.name === 'resources') return { rows: c.index.activeResources, test: p };
    const active = nodeState(c.entity, c.index).get;
    return { rows: all, test: (row) => (active(row) ? p(row) : false) };
  }
  if (c.entity.name === 'reports' && !c.mentions.has('type'))
    return { rows: all, test: (row) => (row.type === 'agent' ? p(row) : false) };
  return { rows: all, test: p };
}

/** A compiled filter: the rows it draws from and the test each must pass. */
export interface Filter {
  rows: any[];
  test: Predicate;
  /**
   * The rows of `rows` (in their order) that an equality of the query found in an index: every row that can pass
   * is among them, so a select of `rows` tests only these.
   */
  candidates?: any[];
}

export function compileFilter(entity: Entity, index: Index, node: unknown): Filter {
  const c: Compiler = { entity, index, mentions: new Set() };
  if (node === undefined || node === null) return withDefaults(c, () => true);
  // ["=", "type", "any"] on reports shows every type.
  const where = anyType(entity, node);
  const filter = withDefaults(c, compileNode(c, where));
  return { ...filter, candidates: candidatesOf(entity, filter.rows, where) };
}

/** The rows a filter keeps (of its own rows, only the candidates are tested). */
export const select = (f: Filter, rows: any[] = f.rows) =>
  (rows === f.rows && f.candidates ? f.candidates : rows).filter((row) => f.test(row) === true);

// ---- equality indexes ----------------------------------------------------------------------------------------------

/**
 * Per row array (rebuilt whenever what it is built from changes, so an index never outlives its rows) and per field:
 * the rows by their scalar value, in row order, or how many queries of that field were answered by a scan so far.
 */
const equalityIndexes = new WeakMap<any[], Map<string, Map<unknown, any[]> | number>>();

const INDEXES_PER_ROWS = 64;

/**
 * Queries of a field answered by scanning the same rows before its index is built. Rows are rebuilt at each write,
 * and an index pays back its building only over several queries (100,000 resources: building the two of a route
 * query took about 12 ms, each query then 2.3 ms less than a scan); built at once, a query after each write paid for
 * it (24 ms against 12 ms scanning). So scans first pay part of what the index would cost, as in renting before
 * buying: with queries running while catalogs are written, the longest took 18-23 ms after 3 scans, 31-53 ms after
 * 0 or 1, 18-28 ms with no index; median 10.2-10.7 ms against 8.1-15.5 ms.
 */
export const SCANS_BEFORE_INDEX = 3;

/** The rows whose field `key` equals `value`, from the index; undefined while the field's queries still scan. */
function rowsEqualTo(rows: any[], key: string, get: (row: any) => unknown, value: unknown): any[] | undefined {
  let mine = equalityIndexes.get(rows);
  if (!mine) equalityIndexes.set(rows, (mine = new Map()));
  const known = mine.get(key);
  if (known instanceof Map) return known.get(value) ?? [];
  // Parameter names are the user's: at most INDEXES_PER_ROWS fields are remembered, the oldest dropped first.
  if (known === undefined && mine.size >= INDEXES_PER_ROWS) mine.delete(mine.keys().next().value!);
  const scans = known ?? 0;
  if (scans < SCANS_BEFORE_INDEX) {
    mine.set(key, scans + 1);
    return undefined;
  }
  const byValue = new Map<unknown, any[]>();
  for (const row of rows) {
    const v = get(row);
    // Only scalars: a list or object never equals the scalar an indexed equality asks for (MISSING is a symbol).
    if (v !== null && typeof v === 'object') continue;
    const list = byValue.get(v);
    if (list) list.push(row);
    else byValue.set(v, [row]);
  }
  mine.set(key, byValue);
  return byValue.get(value) ?? [];
}

/**
 * The rows an equality `node` (or the conjunct of a top-level `and` with the fewest) can be true of: `=` of a
 * string, number or boolean field (with a value of its type or null), or of a resource parameter (with a scalar):
 * what equality tests with ===. Undefined when the query has none or its fields are still scanned; the compiled test
 * is still applied to every candidate.
 */
function candidatesOf(entity: Entity, rows: any[], node: unknown): any[] | undefined {
  if (!Array.isArray(node) || typeof node[0] !== 'string') return undefined;
  if (node[0].toLowerCase() === 'and') {
    let best: any[] | undefined;
    for (const part of node.slice(1)) {
      const found = candidatesOf(entity, rows, part);
      if (found && (!best || found.length < best.length)) best = found;
    }
    return best;
  }
  if (node[0] !== '=' || node.length !== 3) return undefined;
  const [, field, value] = node;
  if (Array.isArray(field) && field[0] === 'parameter' && entity.name === 'resources' && typeof field[1] === 'string') {
    if (value !== null && typeof value === 'object') return undefined;
    return rowsEqualTo(rows, `parameter ${field[1]}`, parameter(field[1]), value);
  }
  if (typeof field !== 'string' || !Object.hasOwn(entity.fields, field)) return undefined;
  const f = entity.fields[field]!;
  const types: Partial<Record<Field['kind'], string>> = { string: 'string', number: 'number', boolean: 'boolean' };
  if (types[f.kind] === undefined || (value !== null && typeof value !== types[f.kind])) return undefined;
  return rowsEqualTo(rows, field, f.get, value);
}

export function anyType(entity: Entity, node: unknown): unknown {
  if (entity.name !== 'reports' || !Array.isArray(node)) return node;
  if (node[0] === '=' && node[1] === 'type' && node[2] === 'any')
    return ['or', ['=', 'type', 'agent'], ['=', 'type', 'plan']];
  return node.map((n) => anyType(entity, n));
}

// ---- top-level extract ---------------------------------------------------------------------------------------------

export interface Column {
  name: string;
  /** A field's answer value for a row, given the row's answer record. */
  value?: (row: any, record: Record<string, unknown>) => unknown;
  /** An aggregate; `raw` is the field as the query names it (for the SQL backend). */
  fn?: { name: string; field?: (row: any) => unknown; raw?: unknown };
}

export interface Extraction {
  columns: Column[];
  groupBy: string[];
}

export interface CompiledQuery {
  filter: Filter;
  /** The criteria, the route's included: what `filter` tests. */
  where: unknown;
  extract?: Extraction;
}

const FUNCTIONS = ['count', 'avg', 'sum', 'min', 'max'];

function column(entity: Entity, index: Index, raw: unknown, unknown: string[]): Column | undefined {
  if (Array.isArray(raw) && raw[0] === 'function') {
    const name = text(raw[1]).toLowerCase();
    if (!FUNCTIONS.includes(name))
      throw badRequest(`function ${show(raw[1])} is not supported (count, avg, sum, min, max)`);
    if (raw[2] === undefined) {
      if (name !== 'count') throw badRequest(`function ${name} needs a field`);
      return { name, fn: { name } };
    }
    const f = queryField({ entity, index }, raw[2], 'query');
    return { name, fn: { name, field: f.get, raw: raw[2] } };
  }
  if (typeof raw !== 'string') throw badRequest(`${quote(raw)} is not a valid extract field`);
  const json = dottedField(entity, raw);
  if (json) {
    const path = dottedPath(raw);
    const get = entity.fields[json]!.get;
    return {
      name: raw,
      value: (row) => {
        const v = atPath(get(row), path);
        return v === MISSING ? null : v;
      },
    };
  }
  const field = entity.fields[raw];
  if (!field || field.filterOnly) {
    unknown.push(raw);
    return undefined;
  }
  return { name: raw, value: (row, record) => answerValue(entity, row, record, raw) };
}

/** Compiles a query; `fixed` are criteria of the route (`/resources/<type>`), ANDed onto the query's filter. */
export function compileQuery(entity: Entity, data: InventoryData, node: unknown, fixed: unknown[] = []): CompiledQuery {
  const index = indexOf(data);
  const narrowed = (where: unknown) =>
    fixed.length === 0 ? where : ['and', ...fixed, ...(where === undefined ? [] : [where])];
  if (!Array.isArray(node) || text(node[0]).toLowerCase() !== 'extract')
    return { filter: compileFilter(entity, index, narrowed(node)), where: narrowed(node) };
  const [, fields, ...rest] = node;
  const group = rest.find((r) => Array.isArray(r) && text(r[0]).toLowerCase() === 'group_by') as unknown[] | undefined;
  const where = rest.find((r) => r !== group);
  const unknown: string[] = [];
  const columns = (Array.isArray(fields) && fields[0] !== 'function' ? fields : [fields]).map((f) =>
    column(entity, index, f, unknown),
  );
  const groupBy = (group?.slice(1) ?? []).map(String);
  for (const g of groupBy) if (!entity.fields[g] || entity.fields[g]!.filterOnly) unknown.push(g);
  if (unknown.length) throw badRequest(extractError(entity, [...new Set(unknown)]));
  return {
    filter: compileFilter(entity, index, narrowed(where)),
    where: narrowed(where),
    extract: { columns: columns as Column[], groupBy },
  };
}

/** What a field is answered as: its value in the record, or the raw value of a field the record names otherwise. */
function answerValue(entity: Entity, row: any, record: Record<string, unknown>, name: string): unknown {
  return record[name] ?? (entity.fields[name]!.kind === 'timestamp' ? null : entity.fields[name]!.get(row));
}

/** Applies an extraction: a projection, or aggregates per group. Each row's record is built once. */
export function project(rows: any[], x: Extraction, entity: Entity): Record<string, unknown>[] {
  const plain = x.columns.filter((c) => c.value);
  const functions = x.columns.filter((c) => c.fn);
  if (functions.length === 0 && x.groupBy.length === 0) {
    return rows.map((row) => {
      const record = entity.record(row);
      return Object.fromEntries(plain.map((c) => [c.name, c.value!(row, record)]));
    });
  }
  const groups = new Map<unknown, any[]>();
  const groupValue = (row: any) => {
    const record = entity.record(row);
    return canonicalJson(x.groupBy.map((g) => answerValue(entity, row, record, g)));
  };
  const only = x.groupBy.length === 1 ? entity.fields[x.groupBy[0]!]! : undefined;
  if (only && entity.answersAsRead && only.kind !== 'timestamp') {
    // One field answered as read: a scalar is its own key (a Map tells "1" from 1 and "null" from null), a list or
    // object the token of its canonical text; no record per row.
    const tokens = new Map<string, object>();
    const get = only.get;
    for (const row of rows) {
      const v = get(row);
      let key: unknown = v;
      if (v !== null && typeof v === 'object') {
        const text = canonicalJson(v);
        key = tokens.get(text) ?? tokens.set(text, {}).get(text);
      }
      const members = groups.get(key);
      if (members) members.push(row);
      else groups.set(key, [row]);
    }
  } else {
    for (const row of rows) {
      const key = groupValue(row);
      (groups.get(key) ?? groups.set(key, []).get(key)!).push(row);
    }
  }
  if (groups.size === 0 && x.groupBy.length === 0) groups.set('[]', []);
  return [...groups.values()].map((members) => {
    const out: Record<string, unknown> = {};
    for (const c of x.columns) {
      if (c.value) out[c.name] = members.length ? c.value(members[0], entity.record(members[0])) : null;
      else out[c.name] = aggregate(c.fn!, members);
    }
    return out;
  });
}

function aggregate(fn: { name: string; field?: (row: any) => unknown }, rows: any[]): unknown {
  if (fn.name === 'count')
    return fn.field ? rows.filter((r) => fn.field!(r) !== null && fn.field!(r) !== MISSING).length : rows.length;
  const values = rows.map((r) => fn.field!(r)).filter((v): v is number => typeof v === 'number');
  if (values.length === 0) return null;
  switch (fn.name) {
    case 'sum':
      return values.reduce((a, b) => a + b, 0);
    case 'avg':
      return values.reduce((a, b) => a + b, 0) / values.length;
    case 'min':
      return Math.min(...values);
    default:
      return Math.max(...values);
  }
}

/** The `query` URL parameter: JSON, or nothing. Parse errors in PuppetDB's words. */
export function parseQueryParameter(text: string | null): unknown {
  if (text === null || text.trim() === '') return undefined;
  try {
    const ast: unknown = JSON.parse(text);
    checkDepth(ast, 'query');
    return ast;
  } catch (e) {
    if (e instanceof NfvError) throw e;
    const m = /position (\d+)/.exec((e as Error).message);
    const pos = m ? Number(m[1]) : text.length;
    const before = text.slice(0, pos);
    const line = before.split('\n').length;
    const column = pos - before.lastIndexOf('\n');
    throw badRequest(`Json parse error at line ${line}, column ${column}: ${clip((e as Error).message)}`);
  }
}
