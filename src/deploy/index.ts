/**
 * Deployable configuration from a firewall node: iptables-restore, Open vSwitch flows, ipfw and FortiOS.
 *
 * Every format gets the same first-match rule list, normalised once: documented defaults filled in (action DENY,
 * protocol ANY, ports *, directional false), `directional` rules followed by their reverse, and protocol OTHER
 * compiled away, because no format but iptables can say "neither TCP nor UDP": an OTHER rule becomes, before it,
 * the TCP and UDP part of what the later rules (and the default) decide for its addresses, then an all-protocols
 * rule. Rules keep their list order; formats with priorities or rule numbers number them in that order.
 * Addresses with trailing -1 octets become CIDR prefixes; a -1 before a fixed octet becomes an address with a
 * non-contiguous mask (iptables, Open vSwitch, ipfw, FortiOS wildcard addresses all take one).
 */
import type { Node } from '../model/types.js';
import { fortios } from './fortios.js';
import { ipfw } from './ipfw.js';
import { iptables } from './iptables.js';
import { openVswitch } from './openvswitch.js';

export type DeployFormat = 'iptables' | 'ovs' | 'ipfw' | 'fortios';
export const DEPLOY_FORMATS: readonly DeployFormat[] = ['iptables', 'ovs', 'ipfw', 'fortios'];
export interface DeployFile {
  format: DeployFormat;
  filename: string;
  content: string;
}

const TRANSLATORS: Record<DeployFormat, { render: (node: Node, id: number) => string; prefix: string; ext: string }> = {
  iptables: { render: iptables, prefix: 'iptables', ext: 'rules' },
  ovs: { render: openVswitch, prefix: 'ovs', ext: 'flows' },
  ipfw: { render: ipfw, prefix: 'ipfw', ext: 'sh' },
  fortios: { render: fortios, prefix: 'fortios', ext: 'conf' },
};

export function deployFile(node: Node, id: number, format: DeployFormat): DeployFile {
  const t = TRANSLATORS[format];
  const label = (node.configuration?.description || node.name).replace(/[^A-Za-z0-9_.-]/g, '_');
  return { format, filename: `${t.prefix}_${label}_${id}.${t.ext}`, content: t.render(node, id) };
}
