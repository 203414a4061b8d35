/**
 * `/adp/requirements`: requirement sets (PropertyDefinition) and their properties (interface section 4).
 */
import { EmptyCollection, conflict, notFound } from '../../model/errors.js';
import { PropertyDefinitionType, PropertyType } from '../../model/resources.js';
import type { Property, PropertyDefinition } from '../../model/types.js';
import { done, envelope, operation, type Input } from '../operation.js';
import { clearCollection, checkPropertyGraphs, createdAt, findRequirementSet } from './lookups.js';
import { ADP_AREA } from '../../store/network.js';
import { nextId, type IdSource } from '../../store/area.js';

const rid = (i: Input) => i.params.rid as number;

function findProperty(set: PropertyDefinition, pid: number): Property {
  const p = set.property.find((x) => x.id === pid);
  if (!p) throw notFound(`property ${pid} does not exist in requirement set ${set.id}`);
  return p;
}

/** Properties get ids; on replacement, a property keeps the id of the one it replaces at the same position. */
async function withIds(ids: IdSource, properties: Property[], previous: Property[] = []): Promise<Property[]> {
  const fresh = await ids.take('property', Math.max(0, properties.length - previous.length));
  return properties.map((p, k) => ({ ...p, id: previous[k]?.id ?? fresh.shift()! }));
}

export const requirementsList = operation({
  name: 'requirements.list',
  method: 'GET',
  path: '/adp/requirements',
  summary: 'List all requirement sets',
  reply: { envelope: { item: PropertyDefinitionType, many: true } },
  status: 200,
  errors: 'envelope',
  handler: async ({ ws }) => {
    const data = await ws.read(ADP_AREA);
    if (data.requirementSets.length === 0) throw new EmptyCollection('requirement sets');
    return envelope(data.requirementSets);
  },
});

export const requirementsCreate = operation({
  name: 'requirements.create',
  method: 'POST',
  path: '/adp/requirements',
  summary: 'Create a requirement set',
  body: PropertyDefinitionType,
  reply: { envelope: { item: 'id' } },
  status: 201,
  errors: 'envelope',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, async (data, ids) => {
      checkPropertyGraphs(data, i.body);
      const set = { id: await nextId(ids, 'requirementSet'), property: await withIds(ids, i.body.property) };
      data.requirementSets.push(set);
      return createdAt(envelope(set.id), `/adp/requirements/${set.id}`);
    }),
});

export const requirementsDeleteAll = operation({
  name: 'requirements.deleteAll',
  method: 'DELETE',
  path: '/adp/requirements',
  summary: 'Delete all requirement sets',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async ({ ws }) => clearCollection(ws, 'requirementSets', 'requirement sets'),
});

export const requirementsGet = operation({
  name: 'requirements.get',
  method: 'GET',
  path: '/adp/requirements/{rid}',
  summary: 'Get a requirement set',
  reply: { envelope: { item: PropertyDefinitionType } },
  status: 200,
  errors: 'envelope',
  handler: async (i) => envelope(findRequirementSet(await i.ws.read(ADP_AREA), rid(i))),
});

export const requirementsUpdate = operation({
  name: 'requirements.update',
  method: 'PUT',
  path: '/adp/requirements/{rid}',
  summary: 'Replace the properties of a requirement set',
  body: PropertyDefinitionType,
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, async (data, ids) => {
      const set = findRequirementSet(data, rid(i));
      checkPropertyGraphs(data, i.body);
      set.property = await withIds(ids, i.body.property, set.property);
      return done();
    }),
});

export const requirementsDelete = operation({
  name: 'requirements.delete',
  method: 'DELETE',
  path: '/adp/requirements/{rid}',
  summary: 'Delete a requirement set',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const set = findRequirementSet(data, rid(i));
      data.requirementSets = data.requirementSets.filter((s) => s !== set);
      return done();
    }),
});

export const propertiesCreate = operation({
  name: 'properties.create',
  method: 'POST',
  path: '/adp/requirements/{rid}/properties',
  summary: 'Add a property to a requirement set',
  body: PropertyType,
  reply: { envelope: { item: 'id' } },
  status: 201,
  errors: 'envelope',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, async (data, ids) => {
      const set = findRequirementSet(data, rid(i));
      checkPropertyGraphs(data, { property: [i.body] });
      const [p] = await withIds(ids, [i.body]);
      set.property.push(p!);
      return createdAt(envelope(p!.id), `/adp/requirements/${set.id}/properties/${p!.id}`);
    }),
});

export const propertiesGet = operation({
  name: 'properties.get',
  method: 'GET',
  path: '/adp/requirements/{rid}/properties/{pid}',
  summary: 'Get a property',
  reply: { envelope: { item: PropertyType } },
  status: 200,
  errors: 'envelope',
  handler: async (i) =>
    envelope(findProperty(findRequirementSet(await i.ws.read(ADP_AREA), rid(i)), i.params.pid as number)),
});

export const propertiesUpdate = operation({
  name: 'properties.update',
  method: 'PUT',
  path: '/adp/requirements/{rid}/properties/{pid}',
  summary: 'Replace a property',
  body: PropertyType,
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const set = findRequirementSet(data, rid(i));
      const old = findProperty(set, i.params.pid as number);
      checkPropertyGraphs(data, { property: [i.body] });
      set.property[set.property.indexOf(old)] = { ...i.body, id: old.id };
      return done();
    }),
});

export const propertiesDelete = operation({
  name: 'properties.delete',
  method: 'DELETE',
  path: '/adp/requirements/{rid}/properties/{pid}',
  summary: 'Delete a property',
  reply: 'none',
  status: 200,
  errors: 'document',
  handler: async (i) =>
    i.ws.mutate(ADP_AREA, (data) => {
      const set = findRequirementSet(data, rid(i));
      const p = findProperty(set, i.params.pid as number);
      if (set.property.length === 1)
        throw conflict(`property ${p.id} is the last of requirement set ${set.id}; delete the set instead`);
      set.property = set.property.filter((x) => x !== p);
      return done();
    }),
});

export const requirementOperations = [
  requirementsList,
  requirementsCreate,
  requirementsDeleteAll,
  requirementsGet,
  requirementsUpdate,
  requirementsDelete,
  propertiesCreate,
  propertiesGet,
  propertiesUpdate,
  propertiesDelete,
];
