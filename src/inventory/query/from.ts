/**
 * Queries of PuppetDB's root endpoint (`/pdb/query/v4`): the text as PQL or as a JSON AST, the `["from", entity,
 * query?, paging...]` form they come to, and the restriction to active nodes PuppetDB adds (http/query.clj,
 * query_eng/engine.clj at 7.12.1).
 */
import { badRequest, clip } from '../../model/errors.js';
import { FROM_SHAPE, isPagingClause, pagingClauses, parseQueryParameter } from './ast.js';
import { parsePql } from './pql.js';

/** PuppetDB's test for an AST: optional whitespace (Java's `\s`), then `[`. Anything else is PQL. */
const JSON_QUERY = /^[ \t\n\v\f\r]*\[/;

/** The query text as an AST: JSON when it starts with `[`, else PQL (400s in PuppetDB's words for either). */
export function parseQueryText(text: string): unknown {
  return JSON_QUERY.test(text) ? parseQueryParameter(text) : parsePql(text);
}

const INITIAL_SHAPE =
  'Your initial query must be of the form: ["from",<entity>,(<optional-query>)]. Check your query and try again.';

/** Every entity PuppetDB 7.12.1 answers at the root (entity-fn-idx), in the underscore spelling. */
export const PUPPETDB_ENTITIES = new Set([
  'aggregate_event_counts',
  'event_counts',
  'inventory',
  'facts',
  'fact_contents',
  'fact_paths',
  'fact_names',
  'factsets',
  'catalogs',
  'catalog_input_contents',
  'catalog_inputs',
  'nodes',
  'environments',
  'producers',
  'packages',
  'package_inventory',
  'events',
  'edges',
  'reports',
  'report_metrics',
  'report_logs',
  'resources',
]);

/** The parts of a `["from", entity, query?, paging...]` AST, checked in PuppetDB's order and words. */
export interface FromParts {
  /** The entity as named, in the underscore spelling (PuppetDB reads `fact-contents` as `fact_contents`). */
  entity: string;
  /** The criteria or extract, if any. */
  query?: unknown;
  /** limit, offset and order_by of the paging clauses, as URL parameters. */
  paging: URLSearchParams;
}

export function fromParts(ast: unknown): FromParts {
  if (!Array.isArray(ast) || ast[0] !== 'from' || typeof ast[1] !== 'string') throw badRequest(INITIAL_SHAPE);
  const rest = ast.slice(2);
  let query: unknown;
  let clauses = rest;
  if (rest.length && !isPagingClause(rest[0])) {
    if (!Array.isArray(rest[0])) throw badRequest(FROM_SHAPE);
    // An empty query is no criteria.
    query = rest[0].length ? rest[0] : undefined;
    clauses = rest.slice(1);
  }
  return { entity: ast[1].replace(/-/g, '_'), query, paging: pagingClauses(clauses) };
}

/** PuppetDB's "Invalid entity" refusal. */
export const invalidEntity = (name: string) => badRequest(`Invalid entity '${clip(name)}' in query`);

/**
 * Entities without certnames, which PuppetDB does not restrict to active nodes (fact_names and producers are nfv's
 * addition: they have no certname to restrict by).
 */
const NO_CERTNAME = new Set(['fact_paths', 'environments', 'packages', 'fact_names', 'producers']);

/** Whether a criterion anywhere in the query (subqueries too) already says which nodes: node_state, or 3.x's form. */
function mentionsNodeState(node: unknown): boolean {
  if (!Array.isArray(node)) return false;
  if (node[0] === '=' && node.length === 3) {
    const field = node[1];
    if (field === 'node_state' || (Array.isArray(field) && field[0] === 'node' && field[1] === 'active')) return true;
  }
  return node.slice(1).some(mentionsNodeState);
}

/** PuppetDB's add-criteria: `crit` ANDed onto a query, inside its `from` and `extract` forms. */
function addCriteria(crit: unknown[], query: unknown): unknown {
  if (Array.isArray(query) && query[0] === 'extract') {
    const [, columns, sub, clauses] = query;
    if (query.length === 2 || (query.length === 3 && sub === null)) return ['extract', columns, crit];
    if (query.length === 3)
      return Array.isArray(sub) && sub[0] === 'group_by'
        ? ['extract', columns, crit, sub]
        : ['extract', columns, ['and', sub, crit]];
    if (query.length === 4) return ['extract', columns, addCriteria(crit, sub), clauses];
  }
  if (Array.isArray(query) && query[0] === 'from' && query.length >= 2) {
    const [, entity, ...rest] = query;
    if (rest.every(isPagingClause)) return ['from', entity, crit, ...rest];
    if (rest.slice(1).every(isPagingClause)) return ['from', entity, addCriteria(crit, rest[0]), ...rest.slice(1)];
  }
  return query === undefined || query === null ? crit : ['and', query, crit];
}

/**
 * The root endpoint's restriction: `["=", "node_state", "active"]` added to every query but those of entities
 * without certnames, unless the query already mentions node_state (then it says which nodes it wants).
 */
export function withActiveNodes(ast: unknown): unknown {
  const entity = Array.isArray(ast) ? ast[1] : undefined;
  if ((typeof entity === 'string' && NO_CERTNAME.has(entity)) || mentionsNodeState(ast)) return ast;
  return addCriteria(['=', 'node_state', 'active'], ast);
}
