/**
 * `/adp/substrates`: substrates with their hosts and connections (interface section 4, "Substrates").
 */
import { EmptyCollection, badRequest, conflict, failedDependency, notFound, quote } from '../../model/errors.js';
import { ConnectionsType, HostType, HostsType } from '../../model/resources.js';
import type { Connection, Connections, Host, Hosts } from '../../model/types.js';
import type { Input, Operation } from '../operation.js';
import { ADP_AREA, clearCollection, checkHostNodes, findSubstrate, nextId, type Substrate } from './data.js';

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

export const substrateOperations: Operation[] = [
  {
    name: 'substrates.list',
    method: 'GET',
    path: '/adp/substrates',
    summary: 'List the ids of all substrates',
    reply: { envelope: { item: 'ids' } },
    status: 200,
    errors: [404, 400],
    handler: async ({ ws }) => {
      const data = await ws.read(ADP_AREA);
      if (data.substrates.length === 0) throw new EmptyCollection('substrates');
      return { content: [data.substrates.map((s) => s.id)] };
    },
  },
  {
    name: 'substrates.create',
    method: 'POST',
    path: '/adp/substrates',
    summary: 'Create an empty substrate',
    reply: { envelope: { item: 'id' } },
    status: 201,
    errors: [400],
    handler: async ({ ws }) =>
      ws.mutate(ADP_AREA, (data) => {
        const s = { id: nextId(data, 'substrate'), hosts: [], connections: [] };
        data.substrates.push(s);
        return { content: [s.id] };
      }),
  },
  {
    name: 'substrates.deleteAll',
    method: 'DELETE',
    path: '/adp/substrates',
    summary: 'Delete all substrates with their hosts and connections',
    reply: 'none',
    status: 200,
    errors: [400, 304],
    handler: async ({ ws }) => clearCollection(ws, 'substrates', 'substrates'),
  },
  {
    name: 'substrates.delete',
    method: 'DELETE',
    path: '/adp/substrates/{sid}',
    summary: 'Delete a substrate with its hosts and connections',
    reply: 'none',
    status: 200,
    errors: [404, 400],
    handler: async (i) =>
      i.ws.mutate(ADP_AREA, (data) => {
        const s = findSubstrate(data, sid(i));
        data.substrates = data.substrates.filter((x) => x !== s);
        return {};
      }),
  },
  {
    name: 'hosts.list',
    method: 'GET',
    path: '/adp/substrates/{sid}/hosts',
    summary: 'List the hosts of a substrate',
    reply: { envelope: { item: HostsType } },
    status: 200,
    errors: [404, 400],
    handler: async (i) => ({
      content: [{ host: findSubstrate(await i.ws.read(ADP_AREA), sid(i)).hosts } satisfies Hosts],
    }),
  },
  {
    name: 'hosts.create',
    method: 'POST',
    path: '/adp/substrates/{sid}/hosts',
    summary: 'Add hosts to a substrate',
    body: HostsType,
    reply: 'none',
    status: 201,
    errors: [404, 400, 424],
    handler: async (i: Input<Hosts>) =>
      i.ws.mutate(ADP_AREA, (data) => {
        const s = findSubstrate(data, sid(i));
        const hosts = i.body.host ?? [];
        if (hosts.length === 0) throw badRequest('hosts.host: at least one host is required');
        for (const h of hosts)
          if (s.hosts.some((x) => x.name === h.name))
            throw badRequest(`host.name: substrate ${s.id} already has a host ${h.name}`);
        checkHostNodes(data, hosts);
        s.hosts.push(...hosts);
        return {};
      }),
  },
  {
    name: 'hosts.deleteAll',
    method: 'DELETE',
    path: '/adp/substrates/{sid}/hosts',
    summary: 'Delete all hosts of a substrate; only when it has no connections',
    reply: 'none',
    status: 200,
    errors: [404, 400, 409],
    handler: async (i) =>
      i.ws.mutate(ADP_AREA, (data) => {
        const s = findSubstrate(data, sid(i));
        if (s.connections.length)
          throw conflict(`substrate ${s.id} has ${s.connections.length} connections; delete them first`);
        s.hosts = [];
        return {};
      }),
  },
  {
    name: 'hosts.get',
    method: 'GET',
    path: '/adp/substrates/{sid}/hosts/{hid}',
    summary: 'Get a host',
    reply: { envelope: { item: HostType } },
    status: 200,
    errors: [404, 400],
    handler: async (i) => ({
      content: [findHost(findSubstrate(await i.ws.read(ADP_AREA), sid(i)), i.params.hid as string)],
    }),
  },
  {
    name: 'hosts.update',
    method: 'PUT',
    path: '/adp/substrates/{sid}/hosts/{hid}',
    summary: 'Replace a host',
    body: HostType,
    reply: 'none',
    status: 200,
    errors: [404, 424, 400],
    handler: async (i: Input<Host>) =>
      i.ws.mutate(ADP_AREA, (data) => {
        const s = findSubstrate(data, sid(i));
        const old = findHost(s, i.params.hid as string);
        if (i.body.name !== old.name)
          throw badRequest(`host.name: ${quote(i.body.name)} differs from the host in the path (${old.name})`);
        checkHostNodes(data, [i.body]);
        s.hosts[s.hosts.indexOf(old)] = i.body;
        return {};
      }),
  },
  {
    name: 'hosts.delete',
    method: 'DELETE',
    path: '/adp/substrates/{sid}/hosts/{hid}',
    summary: 'Delete a host that takes part in no connection',
    reply: 'none',
    status: 200,
    errors: [404, 400, 409],
    handler: async (i) =>
      i.ws.mutate(ADP_AREA, (data) => {
        const s = findSubstrate(data, sid(i));
        const h = findHost(s, i.params.hid as string);
        if (inConnection(s, h.name)) throw conflict(`host ${h.name} takes part in a connection of substrate ${s.id}`);
        s.hosts = s.hosts.filter((x) => x !== h);
        return {};
      }),
  },
  {
    name: 'connections.list',
    method: 'GET',
    path: '/adp/substrates/{sid}/connections',
    summary: 'List the connections of a substrate',
    reply: { envelope: { item: ConnectionsType } },
    status: 200,
    errors: [404, 400],
    handler: async (i) => ({
      content: [{ connection: findSubstrate(await i.ws.read(ADP_AREA), sid(i)).connections } satisfies Connections],
    }),
  },
  {
    name: 'connections.replace',
    method: 'PUT',
    path: '/adp/substrates/{sid}/connections',
    summary: 'Replace all connections of a substrate',
    body: ConnectionsType,
    reply: 'none',
    status: 200,
    errors: [404, 400, 424],
    handler: async (i: Input<Connections>) =>
      i.ws.mutate(ADP_AREA, (data) => {
        const s = findSubstrate(data, sid(i));
        s.connections = mergeConnections(s, [], i.body.connection ?? []);
        return {};
      }),
  },
  {
    name: 'connections.create',
    method: 'POST',
    path: '/adp/substrates/{sid}/connections',
    summary: 'Add connections between existing hosts; duplicates are dropped',
    body: ConnectionsType,
    reply: 'none',
    status: 201,
    errors: [404, 400, 424],
    handler: async (i: Input<Connections>) =>
      i.ws.mutate(ADP_AREA, (data) => {
        const s = findSubstrate(data, sid(i));
        s.connections = mergeConnections(s, s.connections, i.body.connection ?? []);
        return {};
      }),
  },
  {
    name: 'connections.deleteAll',
    method: 'DELETE',
    path: '/adp/substrates/{sid}/connections',
    summary: 'Delete all connections of a substrate',
    reply: 'none',
    status: 200,
    errors: [404, 400],
    handler: async (i) =>
      i.ws.mutate(ADP_AREA, (data) => {
        findSubstrate(data, sid(i)).connections = [];
        return {};
      }),
  },
];
