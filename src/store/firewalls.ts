/**
 * The firewall nodes' file (`fwd.json`): the nodes with their rules, and the check of its structure when it is read.
 */
import type { Node } from '../model/types.js';
import { IdLedger, array, object } from './shape.js';
import type { AreaSpec } from './area.js';

export interface FwdData {
  /** Last id given out per kind (`node`, `rule`); 0 again after a bulk delete (VEREFOO's clients count on it). */
  counters: Record<string, number>;
  nodes: Node[];
}

/** Checks the structure of `fwd.json`: node and rule ids unique and not above their counters. */
function decodeFwd(raw: unknown): FwdData {
  const d = object(raw, 'the file');
  const ids = new IdLedger();
  array(d.nodes, 'nodes').forEach((n, i) => {
    const node = object(n, `nodes[${i}]`);
    ids.add('node', node.id, `nodes[${i}]`);
    // A node's policy may come later (VEREFOO stores a configuration without a firewall).
    const configuration = object(node.configuration, `nodes[${i}].configuration`);
    if (configuration.firewall === undefined) return;
    const fw = object(configuration.firewall, `nodes[${i}].configuration.firewall`);
    array(fw.elements ?? [], `nodes[${i}].configuration.firewall.elements`).forEach((e, k) => {
      ids.add('rule', object(e, `nodes[${i}] rule ${k}`).id, `nodes[${i}] rule ${k}`);
    });
  });
  ids.check(d.counters);
  return d as unknown as FwdData;
}

export const FWD_AREA: AreaSpec<FwdData> = {
  name: 'fwd',
  database: true,
  initial: () => ({ counters: {}, nodes: [] }),
  decode: decodeFwd,
  ids: { kinds: ['node', 'rule'], counters: (data) => data.counters },
};
