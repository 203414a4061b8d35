/**
 * A PQL query's way through the root endpoint before any row is read, for the benchmarks that time it: parsed,
 * restricted to active nodes, checked and compiled to a predicate over rows, and compiled to SQL.
 */
import { emptyInventory } from '../inventory/ingest.js';
import { SqlParameters, filterSql } from '../inventory/query/sql.js';
import { checkQuery, rootQuery } from '../inventory/service.js';

/** The root endpoint's way up to the first row: parse, restrict, check and compile (rows), compile (SQL). */
export function compilePql(text: string): void {
  const root = rootQuery(new URLSearchParams({ query: text }));
  if ('ast' in root) throw new Error('ast_only');
  const { compiled } = checkQuery(root.entity, emptyInventory(), root.params);
  filterSql(root.entity, compiled.where, 'x', new SqlParameters());
}

/** Mean microseconds per call of `run` over `texts`, after a warm-up. */
export function meanMicroseconds(texts: string[], run: (text: string) => void, rounds = 2_000): number {
  for (let k = 0; k < rounds / 10; k++) for (const q of texts) run(q);
  const started = process.hrtime.bigint();
  for (let k = 0; k < rounds; k++) for (const q of texts) run(q);
  return Number(process.hrtime.bigint() - started) / 1000 / (rounds * texts.length);
}
