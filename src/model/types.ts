/**
 * The resources of the interface document (section 2) as TypeScript types, each derived from its one schema in
 * `resources.ts`: keys are the JSON field names, enum values the JSON constants (`ISOLATION_PROPERTY`, `FORBIDDEN`).
 */
import type * as R from './resources.js';
import type { TypeOf } from './schema.js';

export type FunctionalType = (typeof R.FUNCTIONAL_TYPES)[number];
export type Action = NonNullable<Elements['action']>;
export type L4Proto = NonNullable<Elements['protocol']>;
export type PropertyName = Property['name'];

export type Neighbour = TypeOf<typeof R.NeighbourType>;
/** A firewall rule. */
export type Elements = TypeOf<typeof R.ElementsType>;
export type Firewall = TypeOf<typeof R.FirewallType>;
export type Configuration = TypeOf<typeof R.ConfigurationType>;
export type Node = TypeOf<typeof R.NodeType>;
export type Graph = TypeOf<typeof R.GraphType>;
export type Graphs = TypeOf<typeof R.GraphsType>;
export type Constraints = TypeOf<typeof R.ConstraintsType>;
export type NodeMetrics = TypeOf<typeof R.NodeMetricsType>;
export type Property = TypeOf<typeof R.PropertyType>;
export type PropertyDefinition = TypeOf<typeof R.PropertyDefinitionType>;
export type Host = TypeOf<typeof R.HostType>;
export type Hosts = TypeOf<typeof R.HostsType>;
export type Connection = TypeOf<typeof R.ConnectionType>;
export type Connections = TypeOf<typeof R.ConnectionsType>;
export type NFV = TypeOf<typeof R.NfvType>;
export type ForwardingPath = NonNullable<NonNullable<NFV['networkForwardingPaths']>['path']>[number];
export type GeneratedFiles = TypeOf<typeof R.GeneratedFilesType>;
