/**
 * The network workspace's file (`adp.json`): graphs, constraints, requirement sets, substrates and stored
 * simulations, and the check of its structure when it is read.
 */
import type { Connection, Constraints, Graph, Host, PropertyDefinition } from '../model/types.js';
import { IdLedger, array, id, object } from './shape.js';
import type { AreaSpec } from './area.js';

export interface Substrate {
  id: number;
  hosts: Host[];
  connections: Connection[];
}

export interface SimulationRecord {
  id: number;
  /** The stored result NFV (JSON model form). */
  result: unknown;
  /** The non-enforceability report and the solve summary. */
  report: unknown;
  /** Where the inputs came from: the workspace resources it created or was given. */
  source: {
    gids: number[];
    rid?: number;
    sid?: number;
    /** The stored result it reconfigured. */ reconfigured?: number;
  };
  /** How it was run (absent in results stored by nfv 0.1). */
  run?: SimulationRun;
}

export interface SimulationRun {
  algorithm: string;
  /** Solving time, seconds. */
  seconds: number;
  /** When it was stored, ISO 8601. */
  created: string;
  /** What the client named its input (the CLI: the file name), when it did. */
  origin?: string;
}

export interface AdpData {
  /** Last id given out per kind; ids are never reused. */
  counters: Record<string, number>;
  graphs: Graph[];
  constraints: { graph: number; constraints: Constraints }[];
  requirementSets: PropertyDefinition[];
  substrates: Substrate[];
  simulations: SimulationRecord[];
}

/** Checks the structure of `adp.json`: every list present, ids unique per kind and not above their counters. */
function decodeAdp(raw: unknown): AdpData {
  const d = object(raw, 'the file');
  const ids = new IdLedger();
  array(d.graphs, 'graphs').forEach((g, i) => {
    const graph = object(g, `graphs[${i}]`);
    ids.add('graph', graph.id, `graphs[${i}]`);
    array(graph.node, `graphs[${i}].node`).forEach((n, j) => {
      const w = `graphs[${i}].node[${j}]`;
      const node = object(n, w);
      ids.add('node', node.id, w);
      array(node.neighbour ?? [], `${w}.neighbour`).forEach((nb, k) =>
        ids.add('neighbour', object(nb, `${w}.neighbour[${k}]`).id, `${w}.neighbour[${k}]`),
      );
      if (node.configuration !== undefined)
        ids.add('configuration', object(node.configuration, `${w}.configuration`).id, `${w}.configuration`);
    });
  });
  array(d.constraints, 'constraints').forEach((c, i) =>
    id(object(c, `constraints[${i}]`).graph, `constraints[${i}].graph`),
  );
  array(d.requirementSets, 'requirementSets').forEach((r, i) => {
    const set = object(r, `requirementSets[${i}]`);
    ids.add('requirementSet', set.id, `requirementSets[${i}]`);
    array(set.property, `requirementSets[${i}].property`).forEach((p, j) =>
      ids.add('property', object(p, `requirementSets[${i}].property[${j}]`).id, `requirementSets[${i}].property[${j}]`),
    );
  });
  array(d.substrates, 'substrates').forEach((s, i) => {
    const substrate = object(s, `substrates[${i}]`);
    ids.add('substrate', substrate.id, `substrates[${i}]`);
    array(substrate.hosts, `substrates[${i}].hosts`);
    array(substrate.connections, `substrates[${i}].connections`);
  });
  array(d.simulations, 'simulations').forEach((s, i) =>
    ids.add('simulation', object(s, `simulations[${i}]`).id, `simulations[${i}]`),
  );
  ids.check(d.counters);
  return d as unknown as AdpData;
}

export const ADP_AREA: AreaSpec<AdpData> = {
  name: 'adp',
  database: true,
  initial: () => ({ counters: {}, graphs: [], constraints: [], requirementSets: [], substrates: [], simulations: [] }),
  decode: decodeAdp,
  ids: {
    kinds: ['graph', 'node', 'neighbour', 'configuration', 'requirementSet', 'property', 'substrate', 'simulation'],
    counters: (data) => data.counters,
  },
};
