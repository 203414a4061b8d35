/**
 * Paging URL parameters (limit, offset, order_by, include_total) with PuppetDB's validation messages, the check for
 * unknown parameters, and ordering with PostgreSQL's rules (nulls last ascending, first descending).
 */
import { MAX_MESSAGE, badRequest, clip, listWithin } from '../model/errors.js';
import { canonicalJson, clojure, text } from './values.js';

export interface Paging {
  limit?: number;
  offset: number;
  orderBy: { field: string; desc: boolean }[];
  includeTotal: boolean;
}

/** The 2.x hyphenated spellings are accepted as aliases. */
export function param(query: URLSearchParams, name: string): string | null {
  return query.get(name) ?? query.get(name.replace(/_/g, '-'));
}

/** Parameters every query endpoint accepts and ignores. */
const IGNORED = [
  'pretty',
  'explain',
  'timeout',
  'origin',
  'optimize_drop_unused_joins',
  'include_facts_expiration',
  'include_package_inventory',
];

export function rejectUnknown(query: URLSearchParams, allowed: string[]): void {
  const ok = new Set([...allowed, ...IGNORED].flatMap((a) => [a, a.replace(/_/g, '-')]));
  for (const key of query.keys()) if (!ok.has(key)) throw badRequest(`Unsupported query parameter '${clip(key)}'`);
}

export const PAGING_PARAMETERS = ['limit', 'offset', 'order_by', 'include_total'];

/** Clojure's rendering of a map in PuppetDB's messages: {:field "title", :order "asc"}. */
const clj = (o: Record<string, unknown>) => clip(clojure(o, true));

export function parsePaging(query: URLSearchParams, orderable: string[]): Paging {
  const limitText = param(query, 'limit');
  const offsetText = param(query, 'offset');
  let limit: number | undefined;
  if (limitText !== null) {
    if (!/^\d{1,16}$/.test(limitText) || !Number.isSafeInteger(Number(limitText)) || Number(limitText) <= 0) {
      throw badRequest(`Illegal value '${clip(limitText)}' for :limit; expected a positive non-zero integer.`);
    }
    limit = Number(limitText);
  }
  let offset = 0;
  if (offsetText !== null) {
    if (!/^\d{1,16}$/.test(offsetText) || !Number.isSafeInteger(Number(offsetText))) {
      throw badRequest(`Illegal value '${clip(offsetText)}' for :offset; expected a non-negative integer.`);
    }
    offset = Number(offsetText);
  }
  const orderBy: Paging['orderBy'] = [];
  const orderText = param(query, 'order_by');
  if (orderText !== null && orderText.trim() !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(orderText);
    } catch {
      throw badRequest(`Illegal value '${clip(orderText)}' for :order_by; expected a JSON array of maps.`);
    }
    if (!Array.isArray(parsed) || !parsed.every((x) => typeof x === 'object' && x !== null && !Array.isArray(x))) {
      throw badRequest(`Illegal value '${clip(orderText)}' for :order_by; expected an array of maps.`);
    }
    for (const o of parsed as Record<string, unknown>[]) {
      const extra = Object.keys(o).find((k) => k !== 'field' && k !== 'order');
      if (extra) throw badRequest(`Illegal value '${clj(o)}' in :order_by; unknown key '${clip(extra)}'.`);
      if (o.field === undefined)
        throw badRequest(`Illegal value '${clj(o)}' in :order_by; missing required key field.`);
      const order = o.order === undefined ? 'asc' : text(o.order).toLowerCase();
      if (order !== 'asc' && order !== 'desc')
        throw badRequest(`Illegal value '${clj(o)}' in :order_by; 'order' must be either 'asc' or 'desc'`);
      const field = text(o.field);
      if (!orderable.includes(field)) {
        const head = `Unrecognized column '${clip(field)}' specified in :order_by; Supported columns are `;
        throw badRequest(head + listWithin(orderable, MAX_MESSAGE - head.length, false));
      }
      orderBy.push({ field, desc: order === 'desc' });
    }
  }
  return { limit, offset, orderBy, includeTotal: (param(query, 'include_total') ?? '').toLowerCase() === 'true' };
}

function compareValues(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const x = typeof a === 'string' ? a : canonicalJson(a);
  const y = typeof b === 'string' ? b : canonicalJson(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Sorts rows by the order_by columns, reading each column with `get`; nulls last ascending, first descending. */
export function sortRows<T>(rows: T[], orderBy: Paging['orderBy'], get: (row: T, field: string) => unknown): T[] {
  if (orderBy.length === 0) return rows;
  const keyed = rows.map((row) => ({ row, keys: orderBy.map((o) => get(row, o.field)) }));
  keyed.sort((p, q) => {
    for (let k = 0; k < orderBy.length; k++) {
      const a = p.keys[k];
      const b = q.keys[k];
      const desc = orderBy[k]!.desc;
      if (a === b) continue;
      if (a === null || a === undefined) return desc ? -1 : 1;
      if (b === null || b === undefined) return desc ? 1 : -1;
      const c = compareValues(a, b);
      if (c !== 0) return desc ? -c : c;
    }
    return 0;
  });
  return keyed.map((k) => k.row);
}

export function page<T>(rows: T[], p: Paging): { rows: T[]; total: number } {
  const end = p.limit === undefined ? undefined : p.offset + p.limit;
  return { rows: rows.slice(p.offset, end), total: rows.length };
}
