/** Small hand-written placement inputs for the tests, in the module's input shape. */
import type { PlacementGraphNode, PlacementInput } from '../../../src/engine/placement/index.js';
import type { FunctionalType, Host, NodeMetrics } from '../../../src/model/types.js';

type HostOptions = Partial<Omit<Host, 'name' | 'supportedVNF' | 'nodeRef'>> & {
  supports?: FunctionalType[];
  refs?: string[];
};

/** A host with ample capacity unless told otherwise; MIDDLEBOX by default. */
export const host = (name: string, o: HostOptions = {}): Host => {
  const { supports, refs, ...rest } = o;
  const h: Host = { name, cpu: 10, cores: 100, memory: 100, diskStorage: 100, ...rest };
  if (supports) h.supportedVNF = supports.map((functionalType) => ({ functionalType }));
  if (refs) h.nodeRef = refs.map((node) => ({ node }));
  return h;
};

export const conn = (sourceHost: string, destHost: string, avgLatency: number) => ({
  sourceHost,
  destHost,
  avgLatency,
});

const make =
  (kind: PlacementGraphNode['kind'], fallback?: FunctionalType) =>
  (name: string, next: string[], functionalType: FunctionalType | undefined = fallback): PlacementGraphNode => ({
    name,
    kind,
    functionalType,
    neighbours: next,
  });
export const fn = make('function', 'NAT');
export const endhost = make('endhost', 'WEBCLIENT');
export const place = make('place');
export const optional = make('optional', 'FIREWALL');

export const metrics = (node: string, m: Omit<NodeMetrics, 'node'>): NodeMetrics => ({ node, ...m });

export function input(
  nodes: PlacementGraphNode[],
  hosts: Host[],
  connections: ReturnType<typeof conn>[] = [],
  more: Partial<PlacementInput> = {},
): PlacementInput {
  return { graphs: [{ id: 0, nodes }], hosts, connections, used: [], ...more };
}

/** Example A of placement.md section 4: VEREFOO's Optionality/Deployment/optionality1.xml. */
export function exampleA(more: Partial<PlacementInput> = {}): PlacementInput {
  return input(
    [
      endhost('a', ['fw1'], 'WEBCLIENT'),
      optional('fw1', ['a', 'fw3']),
      optional('fw2', ['fw3', 'b']),
      optional('fw3', ['fw1', 'fw2']),
      endhost('b', ['fw2'], 'WEBSERVER'),
    ],
    [
      host('hostA', { cpu: 2, cores: 2, memory: 4, diskStorage: 10, type: 'CLIENT', fixedEndpoint: 'a' }),
      host('host1', {
        cpu: 10,
        cores: 40,
        memory: 160,
        diskStorage: 500,
        maxVNF: 40,
        type: 'MIDDLEBOX',
        supports: ['FIREWALL', 'CACHE', 'FIELDMODIFIER'],
      }),
      host('hostD', { cpu: 2, cores: 2, memory: 4, diskStorage: 10, type: 'SERVER', fixedEndpoint: 'b' }),
    ],
    [conn('hostA', 'host1', 1), conn('host1', 'hostD', 1)],
    {
      nodeMetrics: ['fw1', 'fw2', 'fw3'].map((node) => ({ node, optional: true })),
      ...more,
    },
  );
}
