/**
 * A node's facts as PuppetDB's fact entities see them: one row per top-level fact (facts), and one per leaf of the
 * nested values (fact-contents, fact-paths), with its path (object keys as strings, array places as integers) and
 * PuppetDB's type name. Both backends derive their rows here, so they list the same rows in the same order.
 */
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
  // The path's canonical JSON grows with the path (`open` lacks the closing bracket): one JSON.stringify per key
  // rather than one canonicalJson per leaf, which was most of a factset's ingest.
  const walk = (path: (string | number)[], open: string, name: string, value: unknown) => {
    if (Array.isArray(value)) {
      for (let k = 0; k < value.length; k++) walk([...path, k], `${open},${k}`, name, value[k]);
    } else if (typeof value === 'object' && value !== null) {
      for (const [k, v] of Object.entries(value)) walk([...path, k], `${open},${JSON.stringify(k)}`, name, v);
    } else out.push({ path, pathKey: `${open}]`, name, value, type: leafType(value) });
  };
  for (const [name, value] of Object.entries(values)) walk([name], `[${JSON.stringify(name)}`, name, value);
  return out.sort((a, b) => byText(a.pathKey, b.pathKey));
}
