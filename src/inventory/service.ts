/**
 * The inventory endpoints as functions of the stored data and the URL parameters: resources, reports, events,
 * event counts and aggregate event counts, with paging; and the queries of PuppetDB's root endpoint (PQL or AST),
 * turned into queries of those entities. The ops layer maps paths onto these.
 */
import { badRequest, clip } from '../model/errors.js';
import { ENTITIES, events as eventEntity, indexOf, lookup, type Entity, type EventItem } from './entities.js';
import { emptyInventory, type InventoryData } from './ingest.js';
import { PAGING_PARAMETERS, page, param, parsePaging, rejectUnknown, sortRows } from './paging.js';
import { compileFilter, compileQuery, parseQueryParameter, project, select } from './query/ast.js';
import { PUPPETDB_ENTITIES, fromParts, invalidEntity, parseQueryText, withActiveNodes } from './query/from.js';
import { clojure, parseInstant, text as asText } from './values.js';

export interface Answer {
  rows: unknown[];
  /** Set when include_total was asked for. */
  total?: number;
  /** The rows as compact JSON text, when the store wrote them so (`rows` then parses it). */
  json?: string;
}

const DISTINCT = ['distinct_resources', 'distinct_start_time', 'distinct_end_time'];

/**
 * distinct_resources (with its time window, checked here): undefined when the query does not ask for it, else the
 * window in milliseconds.
 */
export function distinctWindow(query: URLSearchParams): { from: number; to: number } | undefined {
  const on = param(query, 'distinct_resources');
  const start = param(query, 'distinct_start_time');
  const end = param(query, 'distinct_end_time');
  if (on === null && start === null && end === null) return undefined;
  if (on === null)
    throw badRequest(
      "'distinct_resources' query parameter must accompany parameters 'distinct_start_time' and 'distinct_end_time'",
    );
  if (start === null || end === null)
    throw badRequest(
      "'distinct_resources' query parameter requires accompanying parameters " +
        "'distinct_start_time' and 'distinct_end_time'",
    );
  const from = parseInstant(start);
  const to = parseInstant(end);
  if (from === undefined || to === undefined) {
    throw badRequest(
      "query parameters 'distinct_start_time' and 'distinct_end_time' must be valid datetime strings: " +
        `${clip(start)} ${clip(end)}`,
    );
  }
  return on.toLowerCase() === 'true' ? { from, to } : undefined;
}

/** distinct_resources: per (certname, type, title, property, name) only the newest event inside the time window. */
function distinctEvents(window: { from: number; to: number } | undefined, rows: EventItem[]): EventItem[] {
  if (!window) return rows;
  const newest = new Map<string, EventItem>();
  for (const e of rows) {
    if (e.timestamp < window.from || e.timestamp > window.to) continue;
    const key = JSON.stringify([e.report.certname, e.resource_type, e.resource_title, e.property, e.name]);
    const cur = newest.get(key);
    if (!cur || e.timestamp > cur.timestamp) newest.set(key, e);
  }
  return [...newest.values()];
}

/**
 * A query on an entity, checked in PuppetDB's order (parameters, paging, criteria, distinct window): its paging,
 * its compiled criteria (subqueries evaluated on `data`) and, for events, the distinct_resources window.
 */
export function checkQuery(entity: Entity, data: InventoryData, query: URLSearchParams, fixed: unknown[] = []) {
  rejectUnknown(query, ['query', ...PAGING_PARAMETERS, ...(entity === eventEntity ? DISTINCT : [])]);
  const paging = parsePaging(query, entity.orderable);
  const compiled = compileQuery(entity, data, parseQueryParameter(param(query, 'query')), fixed);
  const window = entity === eventEntity ? distinctWindow(query) : undefined;
  return { paging, compiled, window };
}

/**
 * Answers a query on an entity. `fixed` adds criteria of the route (`/resources/<type>`, `/reports/<hash>/events`).
 */
export function queryEntity(
  entity: Entity,
  data: InventoryData,
  query: URLSearchParams,
  fixed: unknown[] = [],
): Answer {
  const { paging, compiled, window } = checkQuery(entity, data, query, fixed);
  const rows = select(compiled.filter, distinctEvents(window, compiled.filter.rows));
  if (compiled.extract) {
    const projected = project(rows, compiled.extract, entity);
    const sorted = sortRows(projected, paging.orderBy, (r, f) => r[f]);
    const paged = page(sorted, paging);
    return { rows: paged.rows, total: paging.includeTotal ? paged.total : undefined };
  }
  const sorted = sortRows(rows, paging.orderBy, (row, f) => entity.fields[f]!.get(row));
  const paged = page(sorted, paging);
  return { rows: paged.rows.map(entity.record), total: paging.includeTotal ? paged.total : undefined };
}

// ---- the root endpoint -------------------------------------------------------------------------------------------

/** A root query: the AST alone (ast_only), or the entity's query as its own URL parameters. */
export type RootQuery =
  | { ast: unknown }
  | {
      entity: Entity;
      params: URLSearchParams;
    };

/**
 * A query of the root endpoint (`/pdb/query/v4`), checked in PuppetDB's order: the query text (PQL, or an AST when
 * it starts with `[`), the parameters, the `from` form and its paging clauses, the entity. With ast_only: the AST as
 * parsed, checked as a query of its entity when nfv has that entity (PuppetDB's other entities are answered
 * unchecked). Otherwise the query restricted to active nodes as PuppetDB does, as the URL parameters of a query of
 * its entity, the from's paging clauses taking the place of the URL's.
 */
export function rootQuery(query: URLSearchParams): RootQuery {
  const text = query.get('query');
  if (text === null) throw badRequest("Missing required query parameter 'query'");
  const ast = parseQueryText(text);
  rejectUnknown(query, ['query', 'ast_only', ...PAGING_PARAMETERS]);
  const astOnly = (param(query, 'ast_only') ?? '').toLowerCase() === 'true';
  const parts = fromParts(astOnly ? ast : withActiveNodes(ast));
  const entity = ENTITIES[parts.entity];
  if (!entity) {
    if (astOnly && PUPPETDB_ENTITIES.has(parts.entity)) return { ast };
    throw invalidEntity(parts.entity);
  }
  const params = new URLSearchParams();
  if (parts.query !== undefined) params.set('query', JSON.stringify(parts.query));
  for (const name of PAGING_PARAMETERS) {
    const value = parts.paging.get(name) ?? param(query, name);
    if (value !== null) params.set(name, value);
  }
  if (astOnly) {
    checkQuery(entity, emptyInventory(), params);
    return { ast };
  }
  return { entity, params };
}

/** Whether a query's `query` parameter is an extract (its rows are what it asked for, not records). */
export function isExtract(params: URLSearchParams): boolean {
  const ast = parseQueryParameter(param(params, 'query'));
  return Array.isArray(ast) && asText(ast[0]).toLowerCase() === 'extract';
}

/**
 * A reports answer under PuppetDB's URLs (the root endpoint, `/pdb/query/v4/reports`): whole records (the query of
 * `params` is not an extract) take PuppetDB's name for the agent's version (`puppet_version`), in its place; an
 * extract keeps the names it asked for.
 */
export function withPuppetdbNames(answer: Answer, params: URLSearchParams): Answer {
  if (isExtract(params)) return answer;
  const rows = answer.rows.map((row) =>
    Object.fromEntries(
      Object.entries(row as Record<string, unknown>).map(([k, v]) => [k === 'agent_version' ? 'puppet_version' : k, v]),
    ),
  );
  return { rows, total: answer.total };
}

// ---- event counts ------------------------------------------------------------------------------------------------

const SUMMARIES = ['resource', 'containing_class', 'certname'];
const COUNT_FIELDS: Record<string, string> = lookup({
  failures: 'failure',
  successes: 'success',
  noops: 'noop',
  skips: 'skipped',
});
/** Each counted status's field, for the loop over every event. */
const COUNTED = new Map<string | null, CountField>(
  Object.entries(COUNT_FIELDS).map(([field, status]) => [status, field as CountField]),
);
type CountField = 'failures' | 'successes' | 'noops' | 'skips';

interface CountRow {
  subject_type: string;
  subject: Record<string, unknown>;
  failures: number;
  successes: number;
  noops: number;
  skips: number;
  [key: string]: unknown;
}

/** A counts_filter: one comparison [op, field, number] on the counts, checked. */
export interface CountsFilter {
  op: '=' | '>' | '<' | '>=' | '<=';
  field: string;
  value: number;
}

const COUNTS_OPERATORS: readonly string[] = ['=', '>', '<', '>=', '<='] satisfies CountsFilter['op'][];
const countsOperator = (op: unknown): op is CountsFilter['op'] =>
  typeof op === 'string' && COUNTS_OPERATORS.includes(op);

export function parseCountsFilter(text: string | null): CountsFilter | undefined {
  if (text === null || text.trim() === '') return undefined;
  let f: unknown;
  try {
    f = JSON.parse(text);
  } catch {
    throw badRequest(`Illegal value '${clip(text)}' for :counts_filter; expected JSON`);
  }
  // PuppetDB's words (compile-term): the filter as Clojure prints it, then what is wrong with it.
  if (!Array.isArray(f))
    throw badRequest(`${clip(clojure(f))} is not well-formed: counts_filter takes one comparison [op, field, number]`);
  if (f.length === 0) throw badRequest('[] is not well-formed: queries must contain at least one operator');
  const [op, field, value] = f;
  if (!countsOperator(op))
    throw badRequest(`${clip(clojure(f))} is not well-formed: query operator '${clip(asText(op))}' is unknown`);
  if (f.length !== 3) throw badRequest(`${op} requires exactly two arguments`);
  if (typeof field !== 'string' || COUNT_FIELDS[field] === undefined)
    throw badRequest(`${clip(asText(field))} is not a queryable object for event counts`);
  if (typeof value !== 'number')
    throw badRequest(`Argument "${clip(asText(value))}" and operator "${clip(asText(op))}" have incompatible types.`);
  return { op, field, value };
}

function countsFilter(text: string | null): (row: CountRow) => boolean {
  const filter = parseCountsFilter(text);
  if (!filter) return () => true;
  const { op, field, value } = filter;
  return (row) => {
    const v = row[field] as number;
    return op === '='
      ? v === value
      : op === '>'
        ? v > value
        : op === '<'
          ? v < value
          : op === '>='
            ? v >= value
            : v <= value;
  };
}

function countRows(data: InventoryData, query: URLSearchParams, summarizeBy: string): CountRow[] {
  if (!SUMMARIES.includes(summarizeBy))
    throw badRequest(`Unsupported value for 'summarize_by': '${clip(summarizeBy)}'`);
  const countBy = param(query, 'count_by') ?? 'resource';
  if (countBy !== 'resource' && countBy !== 'certname')
    throw badRequest(`Unsupported value for 'count_by': '${clip(countBy)}'`);
  const filter = compileFilter(eventEntity, indexOf(data), parseQueryParameter(param(query, 'query')));
  const keep = countsFilter(param(query, 'counts_filter'));
  const rows = select(filter, distinctEvents(distinctWindow(query), filter.rows)) as EventItem[];
  const byResource = summarizeBy === 'resource';
  const titleOf = (e: EventItem): string | null =>
    byResource ? e.resource_title : summarizeBy === 'certname' ? e.report.certname : e.containing_class;
  // Groups found through maps of the event's own strings (by type, then by title; a Map tells null from "null"), so
  // that no key text is made per event; the groups in the order of their first event.
  const groups: CountRow[] = [];
  const byType = new Map<string, Map<string | null, CountRow>>();
  const seen = new Map<CountRow, Set<string>>();
  for (const e of rows) {
    const type = byResource ? e.resource_type : '';
    const title = titleOf(e);
    let titles = byType.get(type);
    if (!titles) byType.set(type, (titles = new Map()));
    let g = titles.get(title);
    if (!g) {
      const subject = byResource ? { type, title } : { title };
      g = { subject_type: summarizeBy, subject, failures: 0, successes: 0, noops: 0, skips: 0 };
      titles.set(title, g);
      groups.push(g);
    }
    if (countBy === 'certname') {
      // Each status of a subject counts once per node.
      const once = JSON.stringify([e.report.certname, e.status]);
      const mine = seen.get(g) ?? seen.set(g, new Set()).get(g)!;
      if (mine.has(once)) continue;
      mine.add(once);
    }
    const counted = COUNTED.get(e.status);
    if (counted) g[counted]++;
  }
  return groups.filter(keep);
}

export function eventCounts(data: InventoryData, query: URLSearchParams): Answer {
  rejectUnknown(query, ['query', 'summarize_by', 'count_by', 'counts_filter', ...DISTINCT, ...PAGING_PARAMETERS]);
  const summarizeBy = param(query, 'summarize_by');
  if (summarizeBy === null) throw badRequest("Missing required query parameter 'summarize_by'");
  const grouping = summarizeBy === 'resource' ? ['resource_type', 'resource_title'] : [summarizeBy];
  const paging = parsePaging(query, ['failures', 'successes', 'noops', 'skips', ...grouping]);
  const rows = countRows(data, query, summarizeBy);
  const get = (r: CountRow, f: string) =>
    f === 'resource_type'
      ? r.subject.type
      : f === 'resource_title' || f === 'certname' || f === 'containing_class'
        ? r.subject.title
        : r[f];
  const paged = page(sortRows(rows, paging.orderBy, get), paging);
  return { rows: paged.rows, total: paging.includeTotal ? paged.total : undefined };
}

export function aggregateEventCounts(data: InventoryData, query: URLSearchParams): Answer {
  rejectUnknown(query, ['query', 'summarize_by', 'count_by', 'counts_filter', ...DISTINCT]);
  const summarizeBy = param(query, 'summarize_by');
  if (summarizeBy === null) throw badRequest("Missing required query parameter 'summarize_by'");
  return {
    rows: summarizeBy.split(',').map((s) => {
      const rows = countRows(data, query, s.trim());
      const having = (f: keyof CountRow) => rows.filter((r) => (r[f] as number) > 0).length;
      return {
        summarize_by: s.trim(),
        successes: having('successes'),
        failures: having('failures'),
        noops: having('noops'),
        skips: having('skips'),
        total: rows.length,
      };
    }),
  };
}
