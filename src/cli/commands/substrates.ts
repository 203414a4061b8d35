import { group, opCommand } from '../context.js';

export const substratesCommand = group('substrates', 'substrates: hosts and the connections between them', [
  opCommand('list', 'substrates.list'),
  opCommand('create', 'substrates.create'),
  opCommand('delete', 'substrates.delete'),
  opCommand('delete-all', 'substrates.deleteAll', { confirm: 'substrates' }),
  group('hosts', 'hosts of a substrate', [
    opCommand('list', 'hosts.list'),
    opCommand('add', 'hosts.create'),
    opCommand('get', 'hosts.get'),
    opCommand('update', 'hosts.update'),
    opCommand('delete', 'hosts.delete'),
    opCommand('delete-all', 'hosts.deleteAll', { confirm: 'hosts of the substrate' }),
  ]),
  group('connections', 'connections between the hosts of a substrate', [
    opCommand('list', 'connections.list'),
    opCommand('set', 'connections.replace'),
    opCommand('add', 'connections.create'),
    opCommand('delete-all', 'connections.deleteAll', { confirm: 'connections of the substrate' }),
  ]),
]);
