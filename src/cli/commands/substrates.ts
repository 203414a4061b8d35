import {
  connectionsCreate,
  connectionsDeleteAll,
  connectionsList,
  connectionsReplace,
  hostsCreate,
  hostsDelete,
  hostsDeleteAll,
  hostsGet,
  hostsList,
  hostsUpdate,
  substratesCreate,
  substratesDelete,
  substratesDeleteAll,
  substratesList,
} from '../../ops/network/substrates.js';
import { group, opCommand } from '../op-command.js';

export const substratesCommand = group('substrates', 'substrates: hosts and the connections between them', [
  opCommand('list', substratesList),
  opCommand('create', substratesCreate),
  opCommand('delete', substratesDelete),
  opCommand('delete-all', substratesDeleteAll, {
    bulkDelete: { item: 'substrate', items: 'substrates', list: substratesList },
  }),
  group('hosts', 'hosts of a substrate', [
    opCommand('list', hostsList),
    opCommand('add', hostsCreate),
    opCommand('get', hostsGet),
    opCommand('update', hostsUpdate),
    opCommand('delete', hostsDelete),
    opCommand('delete-all', hostsDeleteAll, {
      bulkDelete: { item: 'host of the substrate', items: 'hosts of the substrate', list: hostsList },
    }),
  ]),
  group('connections', 'connections between the hosts of a substrate', [
    opCommand('list', connectionsList),
    opCommand('set', connectionsReplace),
    opCommand('add', connectionsCreate),
    opCommand('delete-all', connectionsDeleteAll, {
      bulkDelete: { item: 'connection of the substrate', items: 'connections of the substrate', list: connectionsList },
    }),
  ]),
]);
