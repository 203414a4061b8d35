import {
  configurationGet,
  configurationUpdate,
  constraintsCreate,
  constraintsDelete,
  constraintsGet,
  constraintsReplace,
  graphsCreate,
  graphsDelete,
  graphsDeleteAll,
  graphsGet,
  graphsList,
  graphsUpdate,
  neighboursCreate,
  neighboursDelete,
  nodesCreate,
  nodesDelete,
  nodesGet,
  nodesUpdate,
} from '../../ops/network/graphs.js';
import { group, opCommand } from '../op-command.js';
import { drawCommand } from '../draw.js';

export const graphsCommand = group('graphs', 'graphs of network functions', [
  opCommand('list', graphsList),
  opCommand('create', graphsCreate),
  opCommand('get', graphsGet),
  opCommand('update', graphsUpdate),
  opCommand('delete', graphsDelete),
  opCommand('delete-all', graphsDeleteAll, { bulkDelete: { item: 'graph', items: 'graphs', list: graphsList } }),
  drawCommand('graphs'),
]);

export const nodesCommand = group('nodes', 'nodes of a graph', [
  opCommand('add', nodesCreate),
  opCommand('get', nodesGet),
  opCommand('update', nodesUpdate),
  opCommand('delete', nodesDelete),
]);

export const neighboursCommand = group('neighbours', 'neighbours (outgoing links) of a node', [
  opCommand('add', neighboursCreate),
  opCommand('delete', neighboursDelete),
]);

export const configurationCommand = group('configuration', 'configuration of a node', [
  opCommand('get', configurationGet),
  opCommand('update', configurationUpdate),
]);

export const constraintsCommand = group('constraints', 'node, link and allocation constraints of a graph', [
  opCommand('get', constraintsGet),
  opCommand('set', constraintsReplace),
  opCommand('add', constraintsCreate),
  opCommand('delete', constraintsDelete),
]);
