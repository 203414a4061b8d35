/**
 * Deployable configuration from a firewall node: iptables-restore, nftables (text or JSON), Open vSwitch flows, ipfw,
 * FortiOS and Polycube pcn-iptables (bpf).
 *
 * Every format gets the same first-match rule list, normalised once: documented defaults filled in (action DENY,
 * protocol ANY, ports *, directional false), `directional` rules followed by their reverse, and protocol OTHER
 * compiled away, because no format but iptables can say "neither TCP nor UDP": an OTHER rule becomes, before it,
 * the TCP and UDP part of what the later rules (and the default) decide for its addresses, then an all-protocols
 * rule. Rules keep their list order; formats with priorities or rule numbers number them in that order.
 * CIDR prefixes of any length and trailing -1 octets become prefixes; a -1 before a fixed octet becomes an address
 * with a non-contiguous mask (iptables, nftables, Open vSwitch, ipfw, FortiOS wildcard addresses all take one);
 * pcn-iptables takes prefixes and single ports only, so there it becomes several rules, within a bound (bpf.ts).
 * Ports constrain TCP and UDP only, as in the engine (docs/SEMANTICS.md): ANY with ports is deployed for TCP and UDP.
 * Every format that tracks connections is stateful unless asked `stateless` (iptables, nftables, Open vSwitch with
 * conntrack, ipfw, pcn-iptables): replies of connections the rules allow come back (docs/SEMANTICS.md "Deployed
 * state"); FortiOS is stateful only. The comment under the nfv header line of each file says which it is.
 */
import { badRequest } from '../model/errors.js';
import type { Node } from '../model/types.js';
import { bpf } from './bpf.js';
import { fortios } from './fortios.js';
import { ipfw } from './ipfw.js';
import { iptables } from './iptables.js';
import { nftables, nftablesJson, type NftOptions } from './nftables.js';
import { openVswitch } from './openvswitch.js';

export type DeployFormat = 'iptables' | 'nftables' | 'ovs' | 'ipfw' | 'fortios' | 'bpf';
/**
 * The formats of an "every format" export (generateFiles ALL). bpf is asked for by name only: pcn-iptables takes
 * single ports, so a firewall with a wide port range is refused there, and one refusal would fail the whole export.
 */
export const DEPLOY_FORMATS: readonly DeployFormat[] = ['iptables', 'nftables', 'ovs', 'ipfw', 'fortios'];
export interface DeployFile {
  format: DeployFormat;
  filename: string;
  content: string;
}
/** Options: `stateless` (every format but FortiOS); nftables also sets, and JSON instead of text. */
export interface DeployOptions extends NftOptions {
  json?: boolean;
}

type Render = (node: Node, id: number, options: NftOptions) => string;
const TRANSLATORS: Record<DeployFormat, { render: Render; json?: Render; prefix: string; ext: string }> = {
  iptables: { render: iptables, prefix: 'iptables', ext: 'rules' },
  nftables: { render: nftables, json: nftablesJson, prefix: 'nftables', ext: 'nft' },
  ovs: { render: openVswitch, prefix: 'ovs', ext: 'flows' },
  ipfw: { render: ipfw, prefix: 'ipfw', ext: 'sh' },
  fortios: { render: fortios, prefix: 'fortios', ext: 'conf' },
  bpf: { render: bpf, prefix: 'bpf', ext: 'sh' },
};

export function deployFile(node: Node, id: number, format: DeployFormat, options: DeployOptions = {}): DeployFile {
  const t = TRANSLATORS[format];
  if (options.sets && format !== 'nftables') throw badRequest(`sets: only nftables groups rules into sets`);
  if (options.json && !t.json) throw badRequest(`format: ${format} has no JSON form (nftables has)`);
  if (options.stateless && format === 'fortios')
    throw badRequest(
      'stateless: FortiOS policies are stateful (a session lets its replies back); it has no stateless form',
    );
  const label = (node.configuration?.description || node.name).replace(/[^A-Za-z0-9_.-]/g, '_');
  const render = options.json ? t.json! : t.render;
  const ext = options.json ? 'json' : t.ext;
  if (options.host !== undefined && (options.json || (format !== 'iptables' && format !== 'nftables')))
    throw badRequest(`host: only iptables and nftables text write a host firewall's INPUT and OUTPUT chains`);
  const host = options.host === undefined ? {} : { host: options.host };
  const content = render(node, id, { sets: options.sets, stateless: options.stateless, ...host });
  return { format, filename: `${t.prefix}_${label}_${id}.${ext}`, content };
}
