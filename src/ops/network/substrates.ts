/**
 * `/adp/substrates`: substrates with their hosts and connections (interface section 4, "Substrates").
 */
import { EmptyCollection, badRequest, conflict, failedDependency, notFound, quote } from '../../model/errors.js';
import { ConnectionsType, HostType, HostsType } from '../../model/resources.js';
import type { Connection, Connections, Host, Hosts } from '../../model/types.js';
import { done, envelope, operation, type Input } from '../operation.js';
import { clearCollection, checkHostNodes, createdAt, findSubstrate } from './lookups.js';
import { ADP_AREA, type Substrate } from '../../store/network.js';
import { nextId } from '../../store/area.js';
import { plural } from '../../model/words.js';

const sid = (i: Input) => i.params.sid as number;

function findHost(s: Substrate, hid: string): Host {
  const h = s.hosts.find((x) => x.name === hid);
  if (!h) throw notFound(`host ${hid} does not exist in substrate ${s.id}`);
  return h;
}

const connectionKey = (c: Connection) => `${c.sourceHost}\u0000${c.destHost}`;

/** Connections may only join existing hosts (424); repeated (source, destination) pairs are dropped. */
function mergeConnections(s: Substrate, existing: Connection[], added: Connection[]): Connection[] {
  for (const c of added) {
    for (const end of [c.sourceHost, c.destHost]) {
      if (!s.hosts.some((h) => h.name === end))
        throw failedDependency(`host ${end} does not exist in substrate ${s.id}`);
    }
  }
  const seen = new Set<string>();
  return [...existing, ...added].filter((c) => !seen.has(connectionKey(c)) && seen.add(connectionKey(c)));
}

const inConnection = (s: Substrate, name: string) =>
  s.connections.some((c) => c.sourceHost === name || c.destHost === name);

export const substratesList = operation({
  name: 'substrates.list',
  method: 'GET',
  path: '/adp/substrates',
  summary: 'List the ids of all substrates',
  reply: { envelope: { item: 'ids' } },
  status: 200,
  errors: 'envelope',
  handler: async ({ ws }) => {
    const data = await ws.read(ADP_AREA);
    if (data.substrates.length === 0) throw new EmptyCollection('substrates');
    return envelope(data.substrates.map((s) => s.id));
  },
});

export const substratesCreate = operation({
  name: 'substrates.create',
  method: 'POST',
  path: '/adp/substrates',
  summary: 'Create an empty substrate',
  reply: { envelope: { item: 'id' } },
  status: 201,
  errors: 'envelope',
  handler: async ({ ws }) =>
    ws.mutate(ADP_AREA, async (data, ids) => {
      const s = { id: await nextId(ids, 'substrate'), hosts: [], connections: [] };
      data.substrates.push(s);
      // The interface has no GET of a substrate: its host list is where it is read.
      return createdAt(envelope(s.id), `/adp/substrates/${s.id}/hosts`);
    }),
});

export const substratesDeleteAll = operation({
  name: 'substrates.deleteAll',
  method: 'DELETE',
  path: '/adp/substrates',
  summary: 'Delete all substrates with their hosts and connections',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async ({ ws }) => clearCollection(ws, 'substrates', 'substrates'),
});

export const substratesDelete = operation({
  name: 'substrates.delete',
  method: 'DELETE',
  path: '/adp/substrates/{sid}',
  summary: 'Delete a substrate with its hosts and connections',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const s = findSubstrate(data, sid(i));
      data.substrates = data.substrates.filter((x) => x !== s);
      return done();
    }),
});

export const hostsList = operation({
  name: 'hosts.list',
  method: 'GET',
  path: '/adp/substrates/{sid}/hosts',
  summary: 'List the hosts of a substrate',
  reply: { envelope: { item: HostsType } },
  status: 200,
  errors: 'envelope',
  handler: async (i) => envelope({ host: findSubstrate(await i.ws.read(ADP_AREA), sid(i)).hosts } satisfies Hosts),
});

export const hostsCreate = operation({
  name: 'hosts.create',
  method: 'POST',
  path: '/adp/substrates/{sid}/hosts',
  summary: 'Add hosts to a substrate',
  body: HostsType,
  reply: 'none',
  status: 201,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const s = findSubstrate(data, sid(i));
      const hosts = i.body.host ?? [];
      if (hosts.length === 0) throw badRequest('hosts.host: at least one host is required');
      for (const h of hosts)
        if (s.hosts.some((x) => x.name === h.name))
          throw badRequest(`host.name: substrate ${s.id} already has a host ${h.name}`);
      checkHostNodes(data, hosts);
      s.hosts.push(...hosts);
      return createdAt(done(), `/adp/substrates/${s.id}/hosts/${encodeURIComponent(hosts[0]!.name)}`);
    }),
});

export const hostsDeleteAll = operation({
  name: 'hosts.deleteAll',
  method: 'DELETE',
  path: '/adp/substrates/{sid}/hosts',
  summary: 'Delete all hosts of a substrate; only when it has no connections',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const s = findSubstrate(data, sid(i));
      if (s.connections.length)
        throw conflict(`substrate ${s.id} has ${plural(s.connections.length, 'connection')}; delete them first`);
      s.hosts = [];
      return done();
    }),
});

export const hostsGet = operation({
  name: 'hosts.get',
  method: 'GET',
  path: '/adp/substrates/{sid}/hosts/{hid}',
  summary: 'Get a host',
  reply: { envelope: { item: HostType } },
  status: 200,
  errors: 'envelope',
  handler: async (i) => envelope(findHost(findSubstrate(await i.ws.read(ADP_AREA), sid(i)), i.params.hid as string)),
});

export const hostsUpdate = operation({
  name: 'hosts.update',
  method: 'PUT',
  path: '/adp/substrates/{sid}/hosts/{hid}',
  summary: 'Replace a host',
  body: HostType,
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const s = findSubstrate(data, sid(i));
      const old = findHost(s, i.params.hid as string);
      if (i.body.name !== old.name)
        throw badRequest(`host.name: ${quote(i.body.name)} differs from the host in the path (${old.name})`);
      checkHostNodes(data, [i.body]);
      s.hosts[s.hosts.indexOf(old)] = i.body;
      return done();
    }),
});

export const hostsDelete = operation({
  name: 'hosts.delete',
  method: 'DELETE',
  path: '/adp/substrates/{sid}/hosts/{hid}',
  summary: 'Delete a host that takes part in no connection',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const s = findSubstrate(data, sid(i));
      const h = findHost(s, i.params.hid as string);
      if (inConnection(s, h.name)) throw conflict(`host ${h.name} takes part in a connection of substrate ${s.id}`);
      s.hosts = s.hosts.filter((x) => x !== h);
      return done();
    }),
});

export const connectionsList = operation({
  name: 'connections.list',
  method: 'GET',
  path: '/adp/substrates/{sid}/connections',
  summary: 'List the connections of a substrate',
  reply: { envelope: { item: ConnectionsType } },
  status: 200,
  errors: 'envelope',
  handler: async (i) =>
    envelope({ connection: findSubstrate(await i.ws.read(ADP_AREA), sid(i)).connections } satisfies Connections),
});

export const connectionsReplace = operation({
  name: 'connections.replace',
  method: 'PUT',
  path: '/adp/substrates/{sid}/connections',
  summary: 'Replace all connections of a substrate',
  body: ConnectionsType,
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const s = findSubstrate(data, sid(i));
      s.connections = mergeConnections(s, [], i.body.connection ?? []);
      return done();
    }),
});

export const connectionsCreate = operation({
  name: 'connections.create',
  method: 'POST',
  path: '/adp/substrates/{sid}/connections',
  summary: 'Add connections between existing hosts; duplicates are dropped',
  body: ConnectionsType,
  reply: 'none',
  status: 201,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const s = findSubstrate(data, sid(i));
      s.connections = mergeConnections(s, s.connections, i.body.connection ?? []);
      // Connections have no ids: their list.
      return createdAt(done(), `/adp/substrates/${s.id}/connections`);
    }),
});

export const connectionsDeleteAll = operation({
  name: 'connections.deleteAll',
  method: 'DELETE',
  path: '/adp/substrates/{sid}/connections',
  summary: 'Delete all connections of a substrate',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      findSubstrate(data, sid(i)).connections = [];
      return done();
    }),
});

export const substrateOperations = [
  substratesList,
  substratesCreate,
  substratesDeleteAll,
  substratesDelete,
  hostsList,
  hostsCreate,
  hostsDeleteAll,
  hostsGet,
  hostsUpdate,
  hostsDelete,
  connectionsList,
  connectionsReplace,
  connectionsCreate,
  connectionsDeleteAll,
];
