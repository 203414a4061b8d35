/**
 * A node's facts as PuppetDB's fact entities see them: one row per top-level fact (facts), and one per leaf of the
 * nested values (fact-contents, fact-paths), with its path (object keys as strings, array places as integers) and
 * PuppetDB's type name. Both backends derive their rows here, so they list the same rows in the same order.
 */
import { canonicalJson } from './values.js';

export interface FactRow {
  name: string;
  value: unknown;
}

export interface FactLeaf {
  path: (string | number)[];
  /** The path as canonical JSON: the order of leaves, and their identity. */
  pathKey: string;
  name: string;
  value: unknown;
  type: 'string' | 'integer' | 'float' | 'boolean' | 'null';
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The top-level facts, by name. */
export function factRows(values: Record<string, unknown>): FactRow[] {
  return Object.keys(values)
    .sort(byText)
    .map((name) => ({ name, value: values[name] }));
}

export function leafType(value: unknown): FactLeaf['type'] {
  if (value === null) return 'null';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'float';
  if (typeof value === 'boolean') return 'boolean';
  return 'string';
}

/**
 * The leaves of the facts (values that are neither objects nor arrays; an empty object or array has none), in the
 * order of their paths' canonical JSON.
 */
export function factLeaves(values: Record<string, unknown>): FactLeaf[] {
  const out: FactLeaf[] = [];
  const walk = (path: (string | number)[], value: unknown) => {
    if (Array.isArray(value)) value.forEach((v, k) => walk([...path, k], v));
    else if (typeof value === 'object' && value !== null)
      for (const [k, v] of Object.entries(value)) walk([...path, k], v);
    else out.push({ path, pathKey: canonicalJson(path), name: String(path[0]), value, type: leafType(value) });
  };
  for (const [name, value] of Object.entries(values)) walk([name], value);
  return out.sort((a, b) => byText(a.pathKey, b.pathKey));
}
