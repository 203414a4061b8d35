/**
 * The operation table: every `/adp`, `/fwd` and `/v4` operation, in one list that the CLI and serve mode share.
 */
import { drawOperations } from './adp/draw.js';
import { generateOperations } from './adp/generate.js';
import { graphOperations } from './adp/graphs.js';
import { requirementOperations } from './adp/requirements.js';
import { simulationOperations } from './adp/simulations.js';
import { substrateOperations } from './adp/substrates.js';
import { fwdOperations } from './fwd.js';
import type { Operation } from './operation.js';
import { inventoryOperations } from './v4.js';

export const OPERATIONS: readonly Operation[] = [
  ...requirementOperations,
  ...simulationOperations,
  ...substrateOperations,
  ...graphOperations,
  ...drawOperations,
  ...generateOperations,
  ...fwdOperations,
  ...inventoryOperations,
];

export function operationNamed(name: string): Operation {
  const op = OPERATIONS.find((o) => o.name === name);
  if (!op) throw new Error(`no operation named ${name}`);
  return op;
}
