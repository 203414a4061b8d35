import { group, opCommand } from '../context.js';

export const requirementsCommand = group('requirements', 'requirement sets (isolation and reachability properties)', [
  opCommand('list', 'requirements.list'),
  opCommand('create', 'requirements.create'),
  opCommand('get', 'requirements.get'),
  opCommand('update', 'requirements.update'),
  opCommand('delete', 'requirements.delete'),
  opCommand('delete-all', 'requirements.deleteAll', { confirm: 'requirement sets' }),
]);

export const propertiesCommand = group('properties', 'properties of a requirement set', [
  opCommand('add', 'properties.create'),
  opCommand('get', 'properties.get'),
  opCommand('update', 'properties.update'),
  opCommand('delete', 'properties.delete'),
]);
