/** Small hand-written topologies for the engine tests. */
import type {
  Configuration,
  Constraints,
  Elements,
  FunctionalType,
  NFV,
  Node,
  Property,
} from '../../src/model/types.js';

type NodeSpec = [name: string, type: FunctionalType | undefined, neighbours: string[], configuration?: Configuration];

export const webclient = (name: string, ...neighbours: string[]): NodeSpec => [
  '' + name,
  'WEBCLIENT',
  neighbours,
  { name: 'c', webclient: { nameWebServer: 'x' } },
];
export const webserver = (name: string, ...neighbours: string[]): NodeSpec => [
  name,
  'WEBSERVER',
  neighbours,
  { name: 's', webserver: { name } },
];
export const place = (name: string, ...neighbours: string[]): NodeSpec => [name, undefined, neighbours];
export const forwarder = (name: string, ...neighbours: string[]): NodeSpec => [
  name,
  'FORWARDER',
  neighbours,
  { name: 'f', forwarder: { name: 'Forwarder' } },
];
export const nat = (name: string, sources: string[], ...neighbours: string[]): NodeSpec => [
  name,
  'NAT',
  neighbours,
  { name: 'n', nat: { source: sources } },
];
export const firewall = (
  name: string,
  defaultAction: 'ALLOW' | 'DENY' | undefined,
  rules: Elements[],
  ...neighbours: string[]
): NodeSpec => [name, 'FIREWALL', neighbours, { name: 'fw', firewall: { defaultAction, elements: rules } }];

export const isolation = (src: string, dst: string, more: Partial<Property> = {}): Property => ({
  name: 'ISOLATION_PROPERTY',
  graph: 0,
  src,
  dst,
  ...more,
});
export const reachability = (src: string, dst: string, more: Partial<Property> = {}): Property => ({
  name: 'REACHABILITY_PROPERTY',
  graph: 0,
  src,
  dst,
  ...more,
});

export function network(
  nodes: NodeSpec[],
  properties: Property[],
  constraints?: Constraints,
  serviceGraph?: boolean,
): NFV {
  const node: Node[] = nodes.map(([name, functionalType, neighbours, configuration]) => ({
    name,
    ...(functionalType ? { functionalType } : {}),
    neighbour: neighbours.map((n) => ({ name: n })),
    ...(configuration ? { configuration } : {}),
  }));
  return {
    graphs: { graph: [{ id: 0, ...(serviceGraph ? { serviceGraph } : {}), node }] },
    constraints: constraints ?? { nodeConstraints: {}, linkConstraints: {} },
    propertyDefinition: { property: properties },
  };
}

export const nodeNamed = (nfv: NFV, name: string) => nfv.graphs.graph![0]!.node.find((n) => n.name === name);
