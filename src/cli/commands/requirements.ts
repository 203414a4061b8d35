import {
  propertiesCreate,
  propertiesDelete,
  propertiesGet,
  propertiesUpdate,
  requirementsCreate,
  requirementsDelete,
  requirementsDeleteAll,
  requirementsGet,
  requirementsList,
  requirementsUpdate,
} from '../../ops/network/requirements.js';
import { group, opCommand } from '../op-command.js';

export const requirementsCommand = group('requirements', 'requirement sets (isolation and reachability properties)', [
  opCommand('list', requirementsList),
  opCommand('create', requirementsCreate),
  opCommand('get', requirementsGet),
  opCommand('update', requirementsUpdate),
  opCommand('delete', requirementsDelete),
  opCommand('delete-all', requirementsDeleteAll, {
    bulkDelete: { item: 'requirement set', items: 'requirement sets', list: requirementsList },
  }),
]);

export const propertiesCommand = group('properties', 'properties of a requirement set', [
  opCommand('add', propertiesCreate),
  opCommand('get', propertiesGet),
  opCommand('update', propertiesUpdate),
  opCommand('delete', propertiesDelete),
]);
