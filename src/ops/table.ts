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
import { operation, text, type Operation } from './operation.js';
import { inventoryOperations } from './inventory.js';

/**
 * `GET /`: what serve answers, one operation per line (method, path, summary). VEREFOO answers its base URL with its
 * API's documentation page, and its client suite (`TestRestClient`) checks that the base answers 200.
 */
const apiIndex = operation({
  name: 'api.index',
  method: 'GET',
  path: '/',
  summary: 'The operations this server answers, one per line (our addition; VEREFOO answers its documentation page)',
  reply: 'text',
  status: 200,
  errors: 'json',
  handler: async () => {
    const lines = OPERATIONS.map((op) => `${op.method.padEnd(6)} ${op.path}  ${op.summary}`);
    return text(`nfv serve: ${OPERATIONS.length} operations\n${lines.join('\n')}\n`, 'index.txt', 'text/plain');
  },
});

export const OPERATIONS: readonly Operation[] = [
  apiIndex,
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
