/**
 * PuppetDB's v4 query AST compiled to SQL over the inventory tables (migration 2 in store/postgres.ts). Every
 * predicate gives a row the truth the in-memory compiler (ast.ts) gives it, unknown included: SQL's AND, OR and
 * NOT are the same three-valued logic, and where ast.ts answers false instead of unknown (a missing parameter,
 * membership) the SQL says so with coalesce. Queries reach this module already checked by ast.ts (the same 400s
 * on both backends), so shapes are trusted here; values travel as parameters, never in the SQL text.
 */
import { badRequest, clip } from '../../model/errors.js';
import type { Entity, Kind } from '../entities.js';
import { anyType, dottedField, dottedPath, entityNamed, implicitJoin, isFieldForm, subqueryParts } from './ast.js';
import { canonicalJson, parseInstant, text } from '../values.js';

/** The values of `$n` placeholders, in order. */
export class SqlParameters {
  readonly values: unknown[] = [];
  private aliases = 0;

  /** A placeholder for `value`, cast to `type`. */
  add(value: unknown, type: string): string {
    this.values.push(value);
    return `$${this.values.length}::${type}`;
  }

  /** A fresh table alias (subqueries nest). */
  alias(): string {
    return `x${this.aliases++}`;
  }
}

/** A field's column as stored (json values of events as their canonical text). */
export function columnOf(entity: Entity, alias: string, name: string): string {
  if (name === 'corrective_change' || name === 'latest_report_corrective_change') return 'NULL::boolean';
  if (entity.fields[name]?.kind === 'json' && entity.name === 'events') return `${alias}."${name}_canon"`;
  return `${alias}."${entity.sql.columns?.[name] ?? name}"`;
}

type FieldKind = Kind | 'parameter' | 'dotted';

/** A field as a query uses it. */
interface SqlField {
  name: string;
  kind: FieldKind;
  sql: string;
  /** A dotted field's JSON column and path (object keys only): equality can then test containment first. */
  within?: { column: string; path: string[] };
}

interface Compiler {
  entity: Entity;
  alias: string;
  params: SqlParameters;
  mentions: Set<string>;
}

function fieldOf(c: Compiler, raw: unknown): SqlField {
  const { entity, alias } = c;
  if (Array.isArray(raw) && raw[0] === 'parameter' && entity.name === 'resources') {
    return {
      name: `parameter ${raw[1]}`,
      kind: 'parameter',
      sql: `(${alias}.params -> ${c.params.add(raw[1], 'text')})`,
    };
  }
  if (Array.isArray(raw) && raw[0] === 'fact' && entity.name === 'nodes') {
    const value = `SELECT f.value FROM nfv_inv_facts f WHERE f.certname = ${alias}.certname AND f.name = `;
    return { name: `fact ${raw[1]}`, kind: 'dotted', sql: `(${value}${c.params.add(raw[1], 'text')})` };
  }
  const name = raw as string;
  const json = dottedField(entity, name);
  if (json) {
    const column = columnOf(entity, alias, json);
    const path = dottedPath(name);
    // A path through an array place cannot be written as a containment: those are found by the path alone.
    const within = path.some((k) => /^\d+$/.test(k)) ? undefined : { column, path };
    return { name, kind: 'dotted', sql: `(${column} #> ${c.params.add(path, 'text[]')})`, within };
  }
  if (entity.name === 'resources' && name === 'node_state') return { name, kind: 'node_state', sql: `${alias}.active` };
  if (name === 'node_state') {
    const certname = columnOf(entity, alias, 'certname');
    const inactive = `SELECT 1 FROM nfv_inv_nodes n WHERE n.certname = ${certname} AND n.deactivated IS NOT NULL`;
    return { name, kind: 'node_state', sql: `(NOT EXISTS (${inactive}))` };
  }
  return { name, kind: entity.fields[name]!.kind, sql: columnOf(entity, alias, name) };
}

const JSONB_KINDS: FieldKind[] = ['parameter', 'dotted', 'parameters', 'value'];

function equality(c: Compiler, f: SqlField, value: unknown): string {
  const p = c.params;
  if (value === null && f.kind !== 'json' && !JSONB_KINDS.includes(f.kind)) return `(${f.sql} IS NULL)`;
  switch (f.kind) {
    case 'string':
      return `(${f.sql} = ${p.add(value, 'text')})`;
    case 'number':
      return `(${f.sql} = ${p.add(value, 'float8')})`;
    case 'timestamp':
      return `(${f.sql} = ${p.add(parseInstant(value), 'float8')})`;
    case 'boolean':
    case 'latest': {
      const b = f.kind === 'latest' && typeof value === 'string' ? value.toLowerCase() === 'true' : value;
      return `(${f.sql} = ${p.add(b, 'boolean')})`;
    }
    case 'array':
    case 'tag': {
      const wanted = f.kind === 'tag' ? (value as string).toLowerCase() : value;
      return `(${f.sql} @> ARRAY[${p.add(wanted, 'text')}])`;
    }
    case 'node_state': {
      const state = text(value).toLowerCase();
      return state === 'any' ? 'TRUE' : state === 'active' ? f.sql : `(NOT ${f.sql})`;
    }
    case 'json':
      return `(${f.sql} = ${p.add(canonicalJson(value), 'text')})`;
    case 'path':
      return `(${c.alias}.path_key = ${p.add(canonicalJson(value), 'text')})`;
    case 'parameter':
    case 'dotted':
    case 'value':
    case 'parameters': {
      const same = `coalesce(${f.sql} = ${p.add(JSON.stringify(value), 'jsonb')}, false)`;
      // Containment first, so that a GIN index (params, facts) finds the candidates.
      if (f.within) {
        const nested = f.within.path.reduceRight<unknown>((v, k) => ({ [k]: v }), value);
        return `(${f.within.column} @> ${p.add(JSON.stringify(nested), 'jsonb')} AND ${same})`;
      }
      if (f.kind !== 'parameter') return same;
      const name = f.name.slice('parameter '.length);
      const holds = p.add(JSON.stringify({ [name]: value }), 'jsonb');
      return `(${c.alias}.params @> ${holds} AND ${same})`;
    }
  }
}

function inequality(c: Compiler, f: SqlField, op: string, value: unknown): string {
  const bound = c.params.add(f.kind === 'timestamp' ? parseInstant(value) : value, 'float8');
  if (f.kind === 'dotted' || f.kind === 'value')
    return `(CASE WHEN jsonb_typeof(${f.sql}) = 'number' THEN (${f.sql})::float8 ${op} ${bound} END)`;
  return `(${f.sql} ${op} ${bound})`;
}

function regexMatch(c: Compiler, f: SqlField, value: string): string {
  const p = c.params;
  switch (f.kind) {
    case 'array':
    case 'tag': {
      const re = p.add(f.kind === 'tag' ? value.toLowerCase() : value, 'text');
      const some = `EXISTS (SELECT 1 FROM unnest(${f.sql}) AS t(v) WHERE t.v ~ ${re})`;
      return `(CASE WHEN ${f.sql} IS NULL THEN NULL ELSE ${some} END)`;
    }
    // PuppetDB JSON-encodes the pattern too (see ast.ts).
    case 'parameter':
      return `coalesce(nfv_canonical(${f.sql}) ~ ${p.add(JSON.stringify(value), 'text')}, false)`;
    case 'json':
      return `(${f.sql} ~ ${p.add(JSON.stringify(value), 'text')})`;
    case 'dotted':
    case 'value': {
      const re = p.add(value, 'text');
      return (
        `(CASE jsonb_typeof(${f.sql}) WHEN 'null' THEN NULL WHEN 'string' THEN (${f.sql} #>> '{}') ~ ${re} ` +
        `ELSE nfv_canonical(${f.sql}) ~ ${re} END)`
      );
    }
    default:
      // A node's name is matched once per node rather than once per resource, report or event.
      if (f.name === 'certname' && c.entity.name !== 'catalogs')
        return `(${f.sql} IN (SELECT n.certname FROM nfv_inv_nodes n WHERE n.certname ~ ${p.add(value, 'text')}))`;
      return `(${f.sql} ~ ${p.add(value, 'text')})`;
  }
}

function nullCheck(c: Compiler, f: SqlField, value: boolean): string {
  if (f.kind === 'json') return 'FALSE';
  const b = c.params.add(value, 'boolean');
  if (f.kind === 'dotted' || f.kind === 'parameter' || f.kind === 'value')
    return `(CASE WHEN ${f.sql} IS NULL THEN FALSE ELSE (jsonb_typeof(${f.sql}) = 'null') = ${b} END)`;
  return `((${f.sql} IS NULL) = ${b})`;
}

/** A field's raw value for membership, and the SQL type it compares as ('jsonb' compares across types). */
function rawValue(entity: Entity, alias: string, f: SqlField): { sql: string; type: string } {
  switch (f.kind) {
    case 'string':
      return { sql: f.sql, type: 'text' };
    case 'number':
    case 'timestamp':
      return { sql: `(${f.sql})::float8`, type: 'float8' };
    case 'boolean':
    case 'latest':
      return { sql: f.sql, type: 'boolean' };
    case 'array':
    case 'tag':
      return { sql: f.sql, type: 'text[]' };
    case 'json':
      return { sql: `${alias}."${f.name}"::jsonb`, type: 'jsonb' };
    case 'path':
      return { sql: `${alias}.path_key::jsonb`, type: 'jsonb' };
    default:
      return { sql: f.sql, type: 'jsonb' };
  }
}

function membership(c: Compiler, node: unknown[]): string {
  const rawFields = Array.isArray(node[1]) && !isFieldForm(node[1]) ? (node[1] as unknown[]) : [node[1]];
  const fields = rawFields.map((raw) => fieldOf(c, raw));
  fields.forEach((f) => c.mentions.add(f.name));
  const sub = node[2] as unknown[];
  if (text(sub[0]).toLowerCase() === 'array') {
    const values = sub[1] as unknown[];
    return values.length === 0 ? 'FALSE' : `(${values.map((v) => equality(c, fields[0]!, v)).join(' OR ')})`;
  }
  const { entity, names, where, paging } = subqueryParts(sub);
  const inner = (alias: string) => {
    const source = `${entity.sql.source} ${alias}`;
    const filter = filterSql(entity, where, alias, c.params);
    const values = names.map((n) => rawValue(entity, alias, fieldOf({ ...c, entity, alias }, n)));
    if (!paging || (paging.limit === undefined && paging.offset === 0)) return { from: source, where: filter, values };
    // Only the rows of the page, in the folder backend's order (order_by, then its row order).
    const keys = paging.orderBy.map((o) => `${orderKey(entity, alias, o.field)} ${o.desc ? 'DESC' : 'ASC'}`);
    const limit = paging.limit === undefined ? '' : ` LIMIT ${paging.limit}`;
    const rows = `SELECT ${alias}.* FROM ${source} WHERE ${filter} ORDER BY ${[...keys, `${alias}.ord`].join(', ')}`;
    return { from: `(${rows}${limit} OFFSET ${paging.offset}) ${alias}`, where: 'TRUE', values };
  };
  const outer = fields.map((f) => rawValue(c.entity, c.alias, f));
  const pairs = (values: { sql: string; type: string }[]) =>
    outer.map((o, k) => {
      const i = values[k]!;
      return o.type === i.type ? [o.sql, i.sql] : [`to_jsonb(${o.sql})`, `to_jsonb(${i.sql})`];
    });
  if (outer.length === 1) {
    // Nulls match nulls, as in ast.ts (canonical JSON keys); IN alone would make them unknown.
    const a = inner(c.params.alias());
    const [[o, i]] = pairs(a.values) as [[string, string]];
    const b = inner(c.params.alias());
    const [[, j]] = pairs(b.values) as [[string, string]];
    return (
      `(coalesce(${o} IN (SELECT ${i} FROM ${a.from} WHERE ${a.where} AND ${i} IS NOT NULL), false) OR ` +
      `(${o} IS NULL AND EXISTS (SELECT 1 FROM ${b.from} WHERE ${b.where} AND ${j} IS NULL)))`
    );
  }
  const a = inner(c.params.alias());
  const same = pairs(a.values).map(([o, i]) => `${i} IS NOT DISTINCT FROM ${o}`);
  return `EXISTS (SELECT 1 FROM ${a.from} WHERE ${a.where} AND ${same.join(' AND ')})`;
}

function compileNode(c: Compiler, node: unknown): string {
  const list = node as unknown[];
  const op = (list[0] as string).toLowerCase();
  const args = list.slice(1);
  switch (op) {
    case 'and':
    case 'or':
      return `(${args.map((a) => compileNode(c, a)).join(op === 'and' ? ' AND ' : ' OR ')})`;
    case 'not':
      return `(NOT ${compileNode(c, args[0])})`;
    case 'in':
      return membership(c, list);
    case 'subquery': {
      const inner = entityNamed(args[0]);
      const [outerField, innerField] = implicitJoin(c.entity, inner);
      return membership(c, ['in', outerField, ['from', inner.name, ['extract', innerField, args[1]]]]);
    }
    default: {
      const f = fieldOf(c, args[0]);
      c.mentions.add(f.name);
      if (op === '=') return equality(c, f, args[1]);
      if (op === '~') return regexMatch(c, f, args[1] as string);
      if (op === '~>') {
        // Checked by ast.ts: an array of patterns on a path.
        const res = args[1] as string[];
        const each = res.map((re, k) => `(${f.sql})[${k + 1}] ~ ${c.params.add(re, 'text')}`);
        return `(cardinality(${f.sql}) = ${res.length}${each.map((e) => ` AND ${e}`).join('')})`;
      }
      if (op === 'null?') return nullCheck(c, f, args[1] as boolean);
      if (['<', '>', '<=', '>='].includes(op)) return inequality(c, f, op, args[1]);
      throw badRequest(`'${clip(op)}' is not a known query operator`);
    }
  }
}

/** The criteria of a query on `entity` (rows under `alias`), with PuppetDB's default restrictions. */
export function filterSql(entity: Entity, node: unknown, alias: string, params: SqlParameters): string {
  const c: Compiler = { entity, alias, params, mentions: new Set() };
  const p = node === undefined || node === null ? 'TRUE' : compileNode(c, anyType(entity, node));
  if (entity.activeOnly && !c.mentions.has('node_state')) {
    if (entity.name === 'resources') return `(${alias}.active AND ${p})`;
    return `(${fieldOf(c, 'node_state').sql} AND ${p})`;
  }
  if (entity.name === 'reports' && !c.mentions.has('type')) return `(${alias}.type = 'agent' AND ${p})`;
  return p;
}

/** A field as an ORDER BY key with the folder backend's order (strings by code point, lists by their JSON). */
export function orderKey(entity: Entity, alias: string, name: string): string {
  const col = columnOf(entity, alias, name);
  switch (entity.fields[name]!.kind) {
    case 'string':
      return `${col} COLLATE "C"`;
    case 'json': {
      // As ast.ts compares them: a string by itself, JSON null as no value, anything else by its canonical text.
      const value = `${alias}."${name}"`;
      return (
        `(CASE json_typeof(${value}) WHEN 'string' THEN ${value} #>> '{}' WHEN 'null' THEN NULL ` +
        `ELSE ${col} END) COLLATE "C"`
      );
    }
    case 'array':
    case 'tag':
      return `array_to_json(${col})::text COLLATE "C"`;
    case 'parameters':
      return `nfv_canonical(${col}) COLLATE "C"`;
    case 'path':
      return `${alias}.path_key COLLATE "C"`;
    default:
      return col;
  }
}

/** A field as a GROUP BY key (json values have no equality; their text has). */
export function groupKey(entity: Entity, alias: string, name: string): string {
  const kind = entity.fields[name]!.kind;
  if (entity.fields[name]!.answerOnly && entity.name === 'reports' && name === 'resource_events')
    throw badRequest('group_by resource_events is not supported');
  return kind === 'json' && entity.name !== 'events'
    ? `${columnOf(entity, alias, name)}::text`
    : columnOf(entity, alias, name);
}

/** An aggregate of extract (count, avg, sum, min, max) over a field, counting only what ast.ts counts. */
export function aggregateSql(
  entity: Entity,
  alias: string,
  params: SqlParameters,
  name: string,
  raw?: unknown,
): string {
  if (raw === undefined) return 'count(*)::float8';
  const f = fieldOf({ entity, alias, params, mentions: new Set() }, raw);
  const jsonb = JSONB_KINDS.includes(f.kind) && f.kind !== 'parameters';
  if (name === 'count') {
    if (jsonb) return `count(CASE WHEN jsonb_typeof(${f.sql}) <> 'null' THEN 1 END)::float8`;
    if (f.kind === 'json') return `count(CASE WHEN ${f.sql} <> 'null' THEN 1 END)::float8`;
    return `count(${f.sql})::float8`;
  }
  const number =
    f.kind === 'number' || f.kind === 'timestamp'
      ? `(${f.sql})::float8`
      : jsonb
        ? `(CASE WHEN jsonb_typeof(${f.sql}) = 'number' THEN (${f.sql})::float8 END)`
        : f.kind === 'json'
          ? `(CASE WHEN json_typeof(${alias}."${f.name}") = 'number' THEN (${alias}."${f.name}"::text)::float8 END)`
          : 'NULL::float8';
  return `${name}(${number})`;
}
