/**
 * The resources of the interface document (section 2) as TypeScript types. Keys are the JSON field names; enum
 * values are the JSON constants (`ISOLATION_PROPERTY`, `FORBIDDEN`). The XML spellings live in `resources.ts`.
 */

export const FUNCTIONAL_TYPES = [
  'FIREWALL',
  'ENDHOST',
  'ENDPOINT',
  'ANTISPAM',
  'CACHE',
  'DPI',
  'DPI_S',
  'MAILCLIENT',
  'MAILSERVER',
  'NAT',
  'VPNACCESS',
  'VPNEXIT',
  'WEBCLIENT',
  'WEBSERVER',
  'FIELDMODIFIER',
  'FORWARDER',
  'LOADBALANCER',
  'STATEFUL_FIREWALL',
  'PRIORITY_FIREWALL',
  'WEB_APPLICATION_FIREWALL',
  'TRAFFIC_MONITOR',
] as const;
export type FunctionalType = (typeof FUNCTIONAL_TYPES)[number];
export type Action = 'ALLOW' | 'DENY' | 'ALLOW_COND';
export type L4Proto = 'ANY' | 'TCP' | 'UDP' | 'OTHER';
export type PropertyName = 'ISOLATION_PROPERTY' | 'REACHABILITY_PROPERTY' | 'COMPLETE_REACHABILITY_PROPERTY';

export interface Neighbour {
  id?: number;
  name: string;
}

/** A firewall rule. */
export interface Elements {
  id?: number;
  action?: Action;
  source: string;
  destination: string;
  protocol?: L4Proto;
  srcPort?: string;
  dstPort?: string;
  priority?: string;
  directional?: boolean;
}

export interface Firewall {
  elements?: Elements[];
  defaultAction?: Action;
}

export interface Configuration {
  id?: number;
  name?: string;
  description?: string;
  firewall?: Firewall;
  endhost?: Record<string, unknown>;
  endpoint?: { name?: string };
  antispam?: { source?: string[] };
  cache?: { resource: string[] };
  dpi?: { dpiElements?: { action?: Action; condition: string }[]; defaultAction?: Action };
  mailclient?: { mailserver: string };
  mailserver?: { name?: string };
  nat?: { source: string[] };
  vpnaccess?: { vpnexit: string };
  vpnexit?: { vpnaccess: string };
  webclient?: { nameWebServer: string };
  webserver?: { name?: string };
  fieldmodifier?: { name?: string };
  forwarder?: { name?: string };
  loadbalancer?: { pool: string[] };
  statefulFirewall?: Firewall;
  webApplicationFirewall?: {
    wafElements?: { action?: Action; url?: string; domain?: string }[];
    defaultAction?: Action;
  };
  trafficMonitor?: { name?: string };
}

export interface Node {
  id?: number;
  name: string;
  functionalType?: FunctionalType;
  neighbour?: Neighbour[];
  configuration?: Configuration;
}

export interface Graph {
  id?: number;
  serviceGraph?: boolean;
  node: Node[];
}

export interface Graphs {
  graph?: Graph[];
}

export interface NodeMetrics {
  node: string;
  nrOfOperations?: number;
  maxNodeLatency?: number;
  reqStorage?: number;
  cores?: number;
  memory?: number;
  optional?: boolean;
}

export interface LinkMetrics {
  src: string;
  dst: string;
  reqLatency?: number;
}

export interface AllocationConstraint {
  type: 'FORBIDDEN' | 'FORCED';
  nodeA: string;
  nodeB: string;
}

export interface Constraints {
  nodeConstraints?: { nodeMetrics?: NodeMetrics[] };
  linkConstraints?: { linkMetrics?: LinkMetrics[] };
  allocationConstraints?: { allocationConstraint?: AllocationConstraint[] };
}

export interface Property {
  id?: number;
  name: PropertyName;
  graph: number;
  src: string;
  dst: string;
  lv4Proto?: L4Proto;
  srcPort?: string;
  dstPort?: string;
  isSat?: boolean;
  body?: string;
  httpdefinition?: { url?: string; domain?: string; options?: string };
  pop3Definition?: { from?: string; sender?: string; to?: string; subject?: string; contentType?: string };
}

export interface PropertyDefinition {
  id?: number;
  property: Property[];
}

export interface Host {
  name: string;
  cpu?: number;
  cores?: number;
  diskStorage?: number;
  memory?: number;
  maxVNF?: number;
  type?: 'CLIENT' | 'SERVER' | 'MIDDLEBOX';
  fixedEndpoint?: string;
  active?: boolean;
  supportedVNF?: { functionalType: FunctionalType }[];
  nodeRef?: { node: string }[];
}

export interface Hosts {
  host?: Host[];
}

export interface Connection {
  sourceHost: string;
  destHost: string;
  avgLatency?: number;
}

export interface Connections {
  connection?: Connection[];
}

export interface ForwardingPath {
  id: number;
  pathNode: { name: string }[];
}

export interface NFV {
  graphs: Graphs;
  constraints?: Constraints;
  propertyDefinition: PropertyDefinition;
  initialProperty?: PropertyDefinition;
  hosts?: Hosts;
  connections?: Connections;
  networkForwardingPaths?: { path?: ForwardingPath[] };
  parsingString?: string;
}
