/**
 * `POST /adp/venvironment/generateFiles`: deployable files for every FIREWALL node of an NFV, iptables only or
 * every format. Nodes without an id are numbered by their position among the firewalls (1, 2, ...).
 */
import { badRequest, quote } from '../../model/errors.js';
import { GeneratedFilesType, NfvType } from '../../model/resources.js';

import { envelope, operation } from '../operation.js';

export const venvironmentGenerateFiles = operation({
  name: 'venvironment.generateFiles',
  method: 'POST',
  path: '/adp/venvironment/generateFiles',
  summary: 'Deployable configuration files for every firewall of an NFV (firewallType IPTABLES or ALL)',
  body: NfvType,
  bodyFormats: ['xml'],
  reply: { envelope: { item: GeneratedFilesType } },
  status: 200,
  errors: 'envelope',
  handler: async (i) => {
    const type = i.query.get('firewallType');
    if (type === null) throw badRequest('firewallType: required, IPTABLES or ALL');
    if (type !== 'IPTABLES' && type !== 'ALL') throw badRequest(`firewallType: ${quote(type)} is not IPTABLES or ALL`);
    const { DEPLOY_FORMATS, deployFile } = await import('../../deploy/index.js');
    const formats = type === 'ALL' ? DEPLOY_FORMATS : (['iptables'] as const);
    const firewalls = (i.body.graphs.graph ?? []).flatMap((g) => g.node).filter((n) => n.functionalType === 'FIREWALL');
    if (firewalls.length === 0) throw badRequest('the NFV has no FIREWALL node');
    const file = firewalls.flatMap((node, k) => {
      const id = node.id ?? k + 1;
      return formats.map((f) => {
        const d = deployFile(node, id, f);
        return { node: node.name, id, format: d.format, name: d.filename, content: d.content };
      });
    });
    return envelope({ file });
  },
});

export const generateOperations = [venvironmentGenerateFiles];
