import { group, opCommand } from '../context.js';
import { drawCommand } from '../draw.js';

export const graphsCommand = group('graphs', 'graphs of network functions', [
  opCommand('list', 'graphs.list'),
  opCommand('create', 'graphs.create'),
  opCommand('get', 'graphs.get'),
  opCommand('update', 'graphs.update'),
  opCommand('delete', 'graphs.delete'),
  opCommand('delete-all', 'graphs.deleteAll', { confirm: 'graphs' }),
  drawCommand('graphs'),
]);

export const nodesCommand = group('nodes', 'nodes of a graph', [
  opCommand('add', 'nodes.create'),
  opCommand('get', 'nodes.get'),
  opCommand('update', 'nodes.update'),
  opCommand('delete', 'nodes.delete'),
]);

export const neighboursCommand = group('neighbours', 'neighbours (outgoing links) of a node', [
  opCommand('add', 'neighbours.create'),
  opCommand('delete', 'neighbours.delete'),
]);

export const configurationCommand = group('configuration', 'configuration of a node', [
  opCommand('get', 'configuration.get'),
  opCommand('update', 'configuration.update'),
]);

export const constraintsCommand = group('constraints', 'node, link and allocation constraints of a graph', [
  opCommand('get', 'constraints.get'),
  opCommand('set', 'constraints.replace'),
  opCommand('add', 'constraints.create'),
  opCommand('delete', 'constraints.delete'),
]);
