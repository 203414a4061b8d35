/**
 * Change scripts: the commands that take a device from one rule list to another, touching only the rules that
 * differ (a longest common subsequence of the two lists stays). Loaded with the translators, on first use. Both
 * lists are deployed alike, stateful (the default: the conntrack rules at the head stay, positions and numbers
 * counted after them) or `stateless`.
 */
import { badRequest } from '../model/errors.js';
import type { Node } from '../model/types.js';
import { fortiosChange } from './fortios.js';
import { ipfwChange } from './ipfw.js';
import { iptablesChange } from './iptables.js';
import { nftablesChange, type NftOptions } from './nftables.js';
import { openVswitchChange } from './openvswitch.js';

/** By format name (a Map: the name comes from the user). */
export const CHANGE_SCRIPTS = new Map<
  string,
  { render: (from: Node, to: Node, what: string, options?: NftOptions) => string; ext: string }
>([
  ['iptables', { render: iptablesChange, ext: 'rules' }],
  ['nftables', { render: nftablesChange, ext: 'sh' }],
  ['ovs', { render: openVswitchChange, ext: 'flows' }],
  ['ipfw', { render: ipfwChange, ext: 'sh' }],
  [
    'vendor',
    {
      render: (from, to, what, options) => {
        if (options?.stateless) throw badRequest('stateless: FortiOS policies are stateful; it has no stateless form');
        return fortiosChange(from, to, what);
      },
      ext: 'conf',
    },
  ],
]);
