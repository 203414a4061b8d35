/**
 * The operation table: every `/adp`, `/fwd` and `/v4` operation, in one list that the CLI and serve mode share.
 */
import { drawOperations } from './network/draw.js';
import { emulationOperations } from './network/emulation.js';
import { generateOperations } from './network/generate.js';
import { graphOperations } from './network/graphs.js';
import { requirementOperations } from './network/requirements.js';
import { simulationOperations } from './network/simulations.js';
import { substrateOperations } from './network/substrates.js';
import { analysisOperations } from './analysis.js';
import { fwdOperations } from './firewalls.js';
import { importOperations } from './imports.js';
import type { Operation } from './operation.js';
import { inventoryOperations } from './inventory.js';

export const OPERATIONS: readonly Operation[] = [
  ...requirementOperations,
  ...simulationOperations,
  ...emulationOperations,
  ...substrateOperations,
  ...graphOperations,
  ...drawOperations,
  ...generateOperations,
  ...fwdOperations,
  ...analysisOperations,
  ...importOperations,
  ...inventoryOperations,
];
