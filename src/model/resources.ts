/**
 * Schema descriptions of every resource of the interface document, with the XML names of `../xsd/nfvSchema.xsd`
 * and the JSON names VEREFOO's Jackson uses (engine.md B 1.11).
 */
import { quote } from './errors.js';
import { nameProblem } from './ids.js';
import { ADDRESS_HINT, PORT_HINT, parseAddress, parsePorts, portsProblem, ruleAddressProblem } from './address.js';
import {
  enumType,
  type FieldSpec,
  type FieldType,
  type ObjectType,
  type Reporter,
  type ValueOfFields,
} from './schema.js';

/** The functional types of the interface document (XSD functionalTypes). */
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

/** Types where traffic starts or stops and never transits (A.2): the engine's end hosts, emulate's too. */
export const END_HOSTS: ReadonlySet<string> = new Set([
  'WEBCLIENT',
  'WEBSERVER',
  'ENDHOST',
  'ENDPOINT',
  'MAILCLIENT',
  'MAILSERVER',
]);

export const FunctionalTypeEnum = enumType('functional type', FUNCTIONAL_TYPES);
export const ActionEnum = enumType('action (ALLOW, DENY)', ['ALLOW', 'DENY', 'ALLOW_COND']);
/** Which list of an approximated import a rule belongs to (absent: both; firewall-io.md B.5). */
export const ApproximationEnum = enumType('approximation (may, must)', ['may', 'must']);
export const L4ProtoEnum = enumType('protocol (ANY, TCP, UDP, OTHER)', ['ANY', 'TCP', 'UDP', 'OTHER']);
export const PropertyNameEnum = enumType('property name', [
  ['ISOLATION_PROPERTY', 'IsolationProperty'],
  ['REACHABILITY_PROPERTY', 'ReachabilityProperty'],
  ['COMPLETE_REACHABILITY_PROPERTY', 'CompleteReachabilityProperty'],
]);
const EndhostProtocolEnum = enumType('endhost protocol', [
  'HTTP_REQUEST',
  'HTTP_RESPONSE',
  ['POP_3_REQUEST', 'POP3_REQUEST'],
  ['POP_3_RESPONSE', 'POP3_RESPONSE'],
]);
const HostTypeEnum = enumType('host type (CLIENT, SERVER, MIDDLEBOX)', ['CLIENT', 'SERVER', 'MIDDLEBOX']);
const AllocationTypeEnum = enumType('allocation constraint type (FORBIDDEN, FORCED)', [
  ['FORBIDDEN', 'forbidden'],
  ['FORCED', 'forced'],
]);

/** A resource of these fields; its value type is derived from them (`TypeOf`). */
const obj = <const F extends FieldSpec>(
  name: string,
  xml: string,
  fields: readonly F[],
  check?: ObjectType['check'],
): ObjectType<ValueOfFields<F>> => ({ kind: 'object', name, xml, fields, check });
type More = Omit<Partial<FieldSpec>, 'key' | 'type'>;
const attr = <const K extends string, T extends FieldType, const M extends More = object>(key: K, type: T, more?: M) =>
  ({ key, type, attr: true, ...more }) as { key: K; type: T; attr: true } & M;
const elem = <const K extends string, T extends FieldType, const M extends More = object>(key: K, type: T, more?: M) =>
  ({ key, type, ...more }) as { key: K; type: T } & M;
const list = <const K extends string, T extends FieldType, const M extends More = object>(key: K, type: T, more?: M) =>
  ({ key, type, list: true, ...more }) as { key: K; type: T; list: true } & M;
const named = (name: string, xml = name) => obj(name, xml, [elem('name', 'string')]);

/** Each port range valid, and ports only with a protocol that has them (`protocolKey`: TCP, UDP or ANY). */
function checkPorts(v: Record<string, unknown>, report: Reporter, keys: [string, string][], protocolKey: string) {
  for (const [key, label] of keys) {
    const text = v[key];
    if (typeof text === 'string' && !parsePorts(text)) report.add(label, `${quote(text)} ${PORT_HINT}`);
  }
  for (const [key, label] of keys) {
    const problem = typeof v[key] === 'string' && portsProblem(v[protocolKey] as string | undefined, v[key]);
    if (problem) report.add(label, `${quote(v[key])}: ${problem}`);
  }
}

/** A rule's or an except box's match: addresses a rule may name, ports valid and only where the protocol has them. */
function checkMatch(v: Record<string, unknown>, report: Reporter) {
  for (const key of ['source', 'destination']) {
    const problem = ruleAddressProblem(String(v[key]));
    if (problem) report.add(key, `${quote(v[key])} ${problem}`);
  }
  checkPorts(
    v,
    report,
    [
      ['srcPort', 'src_port'],
      ['dstPort', 'dst_port'],
    ],
    'protocol',
  );
}

/**
 * Packets a rule leaves out (nfv extension, docs/SEMANTICS.md "Rules with except"): an imported line behind a RETURN
 * matches its packets less those the RETURN handed back, said as these boxes instead of cut into many rules.
 */
export const ExceptType = obj(
  'except',
  'except',
  [
    attr('source', 'string', { required: true }),
    attr('destination', 'string', { required: true }),
    attr('protocol', L4ProtoEnum),
    attr('srcPort', 'string', { xml: 'src_port' }),
    attr('dstPort', 'string', { xml: 'dst_port' }),
  ],
  checkMatch,
);

export const ElementsType = obj(
  'elements',
  'elements',
  [
    elem('id', 'long'),
    elem('action', ActionEnum),
    elem('source', 'string', { required: true }),
    elem('destination', 'string', { required: true }),
    elem('protocol', L4ProtoEnum),
    elem('srcPort', 'string', { xml: 'src_port' }),
    elem('dstPort', 'string', { xml: 'dst_port' }),
    elem('priority', 'string'),
    elem('directional', 'boolean'),
    // nfv extensions for imported firewalls (firewall-io.md B.5): a rule of the may or the must list only, and the
    // live line it came from.
    attr('approximation', ApproximationEnum),
    attr('origin', 'string'),
    // The packets the rule leaves out (an imported line behind a RETURN): it matches its own less these.
    list('except', ExceptType),
  ],
  (v, report) => {
    if (Array.isArray(v.except) && v.except.length && v.directional === true)
      report.add('except', 'a directional rule cannot have except boxes (give the reverse rule its own)');
    checkMatch(v, report);
  },
);

/**
 * A port forward of a NAT node: packets of this protocol and destination port, from `src` (any source outside what
 * the NAT hides, when absent) to `dst` (the NAT's own address, when absent), go to `to` (and `toPort`).
 */
export const ForwardType = obj(
  'forward',
  'forward',
  [
    attr('protocol', L4ProtoEnum),
    attr('src', 'string'),
    attr('dst', 'string'),
    attr('dstPort', 'string', { xml: 'dst_port' }),
    attr('to', 'string', { required: true }),
    attr('toPort', 'string', { xml: 'to_port' }),
  ],
  (v, report) => {
    if (parseAddress(String(v.to)) === undefined) report.add('to', `${quote(v.to)} ${ADDRESS_HINT}`);
    for (const field of ['src', 'dst'] as const) {
      const problem = typeof v[field] === 'string' ? ruleAddressProblem(v[field]) : undefined;
      if (problem) report.add(field, `${quote(v[field])} ${problem}`);
    }
    checkPorts(v, report, [['dstPort', 'dst_port']], 'protocol');
    if (typeof v.toPort === 'string') {
      const range = parsePorts(v.toPort);
      if (!range || range.lo !== range.hi || v.toPort.trim() === '*')
        report.add('to_port', `${quote(v.toPort)} is not one port (0-65535)`);
      else if (v.protocol !== 'TCP' && v.protocol !== 'UDP')
        report.add('to_port', `${quote(v.toPort)}: a port changes for TCP or UDP only (give protocol TCP or UDP)`);
    }
  },
);

/**
 * A destination a NAT node translates to (nfv extension, docs/SEMANTICS.md "Translation by destination"): with a
 * `translate` list, a packet from what the NAT hides has its source made the NAT's address only where it matches an
 * entry (protocol, destination port, `dst`, and `src` when given), as `-d X -j SNAT` does; others go on unchanged.
 */
export const TranslateType = obj(
  'translate',
  'translate',
  [
    attr('protocol', L4ProtoEnum),
    attr('src', 'string'),
    attr('dst', 'string', { required: true }),
    attr('dstPort', 'string', { xml: 'dst_port' }),
  ],
  (v, report) => {
    for (const field of ['src', 'dst'] as const) {
      const problem = typeof v[field] === 'string' ? ruleAddressProblem(v[field]) : undefined;
      if (problem) report.add(field, `${quote(v[field])} ${problem}`);
    }
    checkPorts(v, report, [['dstPort', 'dst_port']], 'protocol');
  },
);

export const FirewallType = obj('firewall', 'firewall', [
  list('elements', ElementsType),
  attr('defaultAction', ActionEnum),
]);

const CONFIGURATION_KINDS = [
  elem('firewall', FirewallType),
  elem(
    'endhost',
    obj('endhost', 'endhost', [
      attr('body', 'string'),
      attr('sequence', 'long'),
      attr('protocol', EndhostProtocolEnum),
      attr('emailFrom', 'string', { xml: 'email_from' }),
      attr('url', 'string'),
      attr('options', 'string'),
      attr('destination', 'string'),
    ]),
  ),
  elem('endpoint', named('endpoint')),
  elem('antispam', obj('antispam', 'antispam', [list('source', 'string')])),
  elem('cache', obj('cache', 'cache', [list('resource', 'string', { required: true })])),
  elem(
    'dpi',
    obj('dpi', 'dpi', [
      list(
        'dpiElements',
        obj('dpiElements', 'dpi_elements', [
          elem('action', ActionEnum),
          elem('condition', 'string', { required: true }),
        ]),
        { xml: 'dpi_elements' },
      ),
      attr('defaultAction', ActionEnum),
    ]),
  ),
  elem('mailclient', obj('mailclient', 'mailclient', [attr('mailserver', 'string', { required: true })])),
  elem('mailserver', named('mailserver')),
  elem(
    'nat',
    obj(
      'nat',
      'nat',
      [
        list('source', 'string'),
        // nfv extension (docs/SEMANTICS.md, "Port forwards"): with a forward table, what comes to the NAT's address
        // from outside goes to the first entry's host (and port) only, or is delivered to the NAT itself.
        list('forward', ForwardType),
        // nfv extension ("Translation by destination"): sources are translated only to these destinations.
        list('translate', TranslateType),
      ],
      (v, report) => {
        // A NAT that only forwards hides no network; one without a table hides at least one, and so does one that
        // translates by destination (it translates what it hides).
        const none = (k: string) => !Array.isArray(v[k]) || (v[k] as unknown[]).length === 0;
        if (none('source') && (none('forward') || !none('translate')))
          report.add('source', 'at least one item is required');
      },
    ),
  ),
  elem('vpnaccess', obj('vpnaccess', 'vpnaccess', [attr('vpnexit', 'string', { required: true })])),
  elem('vpnexit', obj('vpnexit', 'vpnexit', [attr('vpnaccess', 'string', { required: true })])),
  elem('webclient', obj('webclient', 'webclient', [attr('nameWebServer', 'string', { required: true })])),
  elem('webserver', named('webserver')),
  elem('fieldmodifier', named('fieldmodifier')),
  elem('forwarder', named('forwarder')),
  elem('loadbalancer', obj('loadbalancer', 'loadbalancer', [list('pool', 'string', { required: true })])),
  elem(
    'statefulFirewall',
    { ...FirewallType, name: 'statefulFirewall', xml: 'stateful_firewall' },
    { xml: 'stateful_firewall' },
  ),
  elem(
    'webApplicationFirewall',
    obj('webApplicationFirewall', 'web_application_firewall', [
      list(
        'wafElements',
        obj('wafElements', 'waf_elements', [
          elem('action', ActionEnum),
          elem('url', 'string'),
          elem('domain', 'string'),
        ]),
        { xml: 'waf_elements' },
      ),
      attr('defaultAction', ActionEnum),
    ]),
    { xml: 'web_application_firewall' },
  ),
  elem('trafficMonitor', named('trafficMonitor', 'traffic_monitor'), { xml: 'traffic_monitor' }),
];
export const CONFIGURATION_KIND_KEYS = CONFIGURATION_KINDS.map((f) => f.key);

export const ConfigurationType = obj(
  'configuration',
  'configuration',
  [attr('id', 'long'), attr('name', 'string'), attr('description', 'string'), ...CONFIGURATION_KINDS],
  (v, report) => {
    const kinds = CONFIGURATION_KIND_KEYS.filter((k) => v[k] !== undefined);
    if (kinds.length > 1) report.add('', `holds ${kinds.join(' and ')}; a configuration holds at most one kind`);
  },
);

export const NeighbourType = obj('neighbour', 'neighbour', [
  attr('id', 'long'),
  attr('name', 'string', { required: true }),
]);

export const NodeType = obj(
  'node',
  'node',
  [
    attr('id', 'long'),
    attr('name', 'string', { required: true }),
    attr('functionalType', FunctionalTypeEnum, { xml: 'functional_type' }),
    list('neighbour', NeighbourType),
    elem('configuration', ConfigurationType),
  ],
  (v, report) => {
    if (String(v.name).trim() === '') report.add('name', 'must not be empty');
  },
);

/**
 * Node names unique within a graph, and every neighbour names a node of the same graph (XSD keyNode, keyRefNodeSrc).
 */
function checkGraph(v: Record<string, unknown>, report: Reporter): void {
  const nodes = (v.node as { name: string; neighbour?: { name: string }[] }[]) ?? [];
  const names = new Set<string>();
  nodes.forEach((n, i) => {
    if (names.has(n.name)) report.add(`node[${i}].name`, `${quote(n.name)} is used by another node of the graph`);
    names.add(n.name);
  });
  nodes.forEach((n, i) =>
    (n.neighbour ?? []).forEach((nb, j) => {
      if (!names.has(nb.name))
        report.add(`node[${i}].neighbour[${j}].name`, `${quote(nb.name)} is not a node of the graph`);
    }),
  );
}

export const GraphType = obj(
  'graph',
  'graph',
  [attr('id', 'long'), attr('serviceGraph', 'boolean'), list('node', NodeType, { required: true })],
  checkGraph,
);

export const GraphsType = obj('graphs', 'graphs', [list('graph', GraphType)]);

export const NodeMetricsType = obj('nodeMetrics', 'NodeMetrics', [
  attr('node', 'string', { required: true }),
  attr('nrOfOperations', 'long'),
  attr('maxNodeLatency', 'int'),
  attr('reqStorage', 'int'),
  attr('cores', 'int'),
  attr('memory', 'int'),
  attr('optional', 'boolean'),
]);
const LinkMetricsType = obj('linkMetrics', 'LinkMetrics', [
  attr('src', 'string', { required: true }),
  attr('dst', 'string', { required: true }),
  attr('reqLatency', 'int'),
]);
const AllocationConstraintType = obj('allocationConstraint', 'AllocationConstraint', [
  attr('type', AllocationTypeEnum, { required: true }),
  attr('nodeA', 'string', { required: true }),
  attr('nodeB', 'string', { required: true }),
]);

export const ConstraintsType = obj('constraints', 'Constraints', [
  elem(
    'nodeConstraints',
    obj('nodeConstraints', 'NodeConstraints', [list('nodeMetrics', NodeMetricsType, { xml: 'NodeMetrics' })]),
    { xml: 'NodeConstraints' },
  ),
  elem(
    'linkConstraints',
    obj('linkConstraints', 'LinkConstraints', [list('linkMetrics', LinkMetricsType, { xml: 'LinkMetrics' })]),
    { xml: 'LinkConstraints' },
  ),
  elem(
    'allocationConstraints',
    obj('allocationConstraints', 'AllocationConstraints', [
      list('allocationConstraint', AllocationConstraintType, { xml: 'AllocationConstraint' }),
    ]),
    { xml: 'AllocationConstraints' },
  ),
]);

// The ids of properties and requirement sets are nfv's (VEREFOO's XSD has none): JSON only in answers.
export const PropertyType = obj(
  'property',
  'Property',
  [
    attr('id', 'long', { notInXml: true }),
    attr('name', PropertyNameEnum, { required: true }),
    attr('graph', 'long', { required: true }),
    attr('src', 'string', { required: true }),
    attr('dst', 'string', { required: true }),
    attr('lv4Proto', L4ProtoEnum, { xml: 'lv4proto' }),
    attr('srcPort', 'string', { xml: 'src_port' }),
    attr('dstPort', 'string', { xml: 'dst_port' }),
    attr('isSat', 'boolean'),
    attr('body', 'string'),
    elem(
      'httpdefinition',
      obj('httpdefinition', 'HTTPDefinition', [
        attr('url', 'string'),
        attr('domain', 'string'),
        attr('options', 'string'),
      ]),
      {
        xml: 'HTTPDefinition',
        aliases: ['httpDefinition'],
      },
    ),
    elem(
      'pop3Definition',
      obj('pop3Definition', 'POP3Definition', [
        attr('from', 'string'),
        attr('sender', 'string'),
        attr('to', 'string'),
        attr('subject', 'string'),
        attr('contentType', 'string', { xml: 'content-type' }),
      ]),
      { xml: 'POP3Definition' },
    ),
  ],
  (v, report) =>
    checkPorts(
      v,
      report,
      [
        ['srcPort', 'src_port'],
        ['dstPort', 'dst_port'],
      ],
      'lv4Proto',
    ),
);

export const PropertyDefinitionType = obj('propertyDefinition', 'PropertyDefinition', [
  attr('id', 'long', { notInXml: true }),
  list('property', PropertyType, { xml: 'Property', required: true }),
]);

export const HostType = obj(
  'host',
  'Host',
  [
    attr('name', 'string', { required: true }),
    attr('cpu', 'int'),
    attr('cores', 'int'),
    attr('diskStorage', 'int'),
    attr('memory', 'int'),
    attr('maxVNF', 'int'),
    attr('type', HostTypeEnum),
    attr('fixedEndpoint', 'string'),
    attr('active', 'boolean'),
    list(
      'supportedVNF',
      obj('supportedVNF', 'SupportedVNF', [
        attr('functionalType', FunctionalTypeEnum, { xml: 'functional_type', required: true }),
      ]),
      {
        xml: 'SupportedVNF',
      },
    ),
    list('nodeRef', obj('nodeRef', 'NodeRef', [attr('node', 'string', { required: true })]), { xml: 'NodeRef' }),
  ],
  (v, report) => {
    // A host is addressed by its name in paths (/adp/substrates/{sid}/hosts/{hid}).
    const problem = nameProblem(v.name as string);
    if (problem) report.add('name', problem);
  },
);

export const HostsType = obj('hosts', 'Hosts', [list('host', HostType, { xml: 'Host' })], (v, report) => {
  const seen = new Set<string>();
  ((v.host as { name: string }[]) ?? []).forEach((h, i) => {
    if (seen.has(h.name)) report.add(`host[${i}].name`, `${quote(h.name)} names another host too`);
    seen.add(h.name);
  });
});

export const ConnectionType = obj('connection', 'Connection', [
  attr('sourceHost', 'string', { required: true }),
  attr('destHost', 'string', { required: true }),
  attr('avgLatency', 'int'),
]);
export const ConnectionsType = obj('connections', 'Connections', [
  list('connection', ConnectionType, { xml: 'Connection' }),
]);

const PathType = obj('path', 'Path', [
  attr('id', 'int', { required: true }),
  list('pathNode', obj('pathNode', 'pathNode', [attr('name', 'string', { required: true })]), { required: true }),
]);

/** The cross-references the XSD declares on NFV (keyGraph/PropertyRef, hostKey/Connection*, keyRefNode). */
function checkNfv(v: Record<string, unknown>, report: Reporter): void {
  const nfv = v as {
    graphs: { graph?: { id?: number; node: { name: string }[] }[] };
    propertyDefinition: { property: { graph: number }[] };
  };
  const graphs = nfv.graphs.graph ?? [];
  const ids = new Set<number>();
  graphs.forEach((g, i) => {
    if (g.id !== undefined && ids.has(g.id)) report.add(`graphs.graph[${i}].id`, `graph id ${g.id} is used twice`);
    if (g.id !== undefined) ids.add(g.id);
  });
  nfv.propertyDefinition.property.forEach((p, i) => {
    if (!ids.has(p.graph)) report.add(`propertyDefinition.property[${i}].graph`, `no graph has id ${p.graph}`);
  });
  const hosts = new Set(((v.hosts as { host?: { name: string }[] })?.host ?? []).map((h) => h.name));
  ((v.connections as { connection?: { sourceHost: string; destHost: string }[] })?.connection ?? []).forEach((c, i) => {
    for (const end of ['sourceHost', 'destHost'] as const) {
      if (!hosts.has(c[end])) report.add(`connections.connection[${i}].${end}`, `${quote(c[end])} is not a host`);
    }
  });
  const nodeNames = new Set(graphs.flatMap((g) => g.node.map((n) => n.name)));
  ((v.networkForwardingPaths as { path?: { pathNode: { name: string }[] }[] })?.path ?? []).forEach((p, i) =>
    p.pathNode.forEach((n, j) => {
      if (!nodeNames.has(n.name))
        report.add(`networkForwardingPaths.path[${i}].pathNode[${j}].name`, `${quote(n.name)} is not a node`);
    }),
  );
}

export const NfvType = obj(
  'nfv',
  'NFV',
  [
    elem('graphs', GraphsType, { required: true }),
    elem('constraints', ConstraintsType, { xml: 'Constraints' }),
    elem('propertyDefinition', PropertyDefinitionType, { xml: 'PropertyDefinition', required: true }),
    elem(
      'initialProperty',
      { ...PropertyDefinitionType, name: 'initialProperty', xml: 'InitialProperty' },
      { xml: 'InitialProperty' },
    ),
    elem('hosts', HostsType, { xml: 'Hosts' }),
    elem('connections', ConnectionsType, { xml: 'Connections' }),
    elem(
      'networkForwardingPaths',
      obj('networkForwardingPaths', 'NetworkForwardingPaths', [list('path', PathType, { xml: 'Path' })]),
      {
        xml: 'NetworkForwardingPaths',
      },
    ),
    elem('parsingString', 'string', { xml: 'ParsingString' }),
  ],
  checkNfv,
);

/** The answer of POST /adp/venvironment/generateFiles: the files generated for each firewall node. */
export const GeneratedFilesType = obj('generatedFiles', 'generatedFiles', [
  list(
    'file',
    obj('file', 'file', [
      attr('node', 'string', { required: true }),
      attr('id', 'long'),
      attr('format', 'string', { required: true }),
      attr('name', 'string', { required: true }),
      elem('content', 'string', { required: true }),
    ]),
  ),
]);
