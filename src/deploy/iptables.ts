/**
 * iptables-restore input: a FORWARD chain in first-match order. Stateful by default: its first rule accepts the
 * packets conntrack files under a connection the rules allowed (ESTABLISHED, RELATED), so replies come back; with
 * `stateless` the chain is the rules alone.
 */
import type { Node } from '../model/types.js';
import { DPORT, DST, SPORT, SRC, intersect } from '../model/space.js';
import {
  address,
  cidr,
  commonSubsequence,
  header,
  hostBox,
  isFull,
  normalisedRules,
  perProtocol,
  protocolOf,
  range,
  stateLine,
  type Rule,
  type TranslatorOptions,
} from './rules.js';

/** The rule a stateful chain starts with. */
const STATEFUL_SPEC = '-m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT';
/** The rules before the firewall's own: the stateful one, or none. */
const headOf = (options: TranslatorOptions) => (options.stateless ? [] : [STATEFUL_SPEC]);

export function iptables(node: Node, id: number, options: TranslatorOptions = {}): string {
  if (options.host !== undefined) return hostChains(node, id, options.host, options);
  const { policy, specs } = forwardChain(node);
  const lines = [
    header(node, id, 'load with: iptables-restore < FILE'),
    stateLine(options.stateless, 'conntrack ESTABLISHED,RELATED first'),
    '*filter',
    ':INPUT ACCEPT [0:0]',
    `:FORWARD ${policy} [0:0]`,
    ':OUTPUT ACCEPT [0:0]',
    ...[...headOf(options), ...specs].map((spec) => `-A FORWARD ${spec}`),
    'COMMIT',
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * iptables-restore --noflush input that takes a FORWARD chain loaded from `from` to the one of `to`: the rules of
 * neither changed nor moved stay, the others are deleted (highest position first) and inserted at their position
 * (a longest common subsequence of the two rule lists decides which stay). Both files are of one kind: stateful,
 * the first rule is the conntrack one, which stays and shifts every position by one; or stateless.
 */
export function iptablesChange(from: Node, to: Node, what: string, options: TranslatorOptions = {}): string {
  const [a, b] = [forwardChain(from), forwardChain(to)];
  const head = headOf(options).length;
  const common = commonSubsequence(a.specs, b.specs);
  const stays = new Set(common.map(([i]) => i));
  const arrives = new Set(common.map(([, j]) => j));
  const deletes = a.specs.flatMap((_, i) => (stays.has(i) ? [] : [i])).reverse();
  const inserts = b.specs.flatMap((spec, j) => (arrives.has(j) ? [] : [[j, spec] as const]));
  const lines = [
    `# nfv: firewall ${to.name}, ${what}: ${deletes.length} deleted, ${inserts.length} inserted, ` +
      `policy ${a.policy === b.policy ? b.policy : `${a.policy} -> ${b.policy}`}`,
    '# load with: iptables-restore --noflush < FILE',
    '*filter',
    options.stateless
      ? '# for a chain nfv deploy iptables --stateless wrote (no conntrack rule)'
      : '# for a chain nfv deploy iptables wrote stateful: its rule 1 (conntrack ESTABLISHED,RELATED) stays first',
    `:FORWARD ${b.policy} [0:0]`,
    ...deletes.map((i) => `-D FORWARD ${head + i + 1}`),
    ...inserts.map(([j, spec]) => `-I FORWARD ${head + j + 1} ${spec}`),
    'COMMIT',
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * A host firewall's node as the host's own chains: INPUT is the node's list for packets to the host, OUTPUT for
 * packets from it, each with the node's default as policy. Loopback is accepted first: its packets never cross
 * the node, so the model says nothing of them, and a host whose INPUT drops them breaks.
 */
function hostChains(node: Node, id: number, host: string, options: TranslatorOptions): string {
  const { rules, defaultAllow } = normalisedRules(node);
  const policy = defaultAllow ? 'ACCEPT' : 'DROP';
  const chain = (name: string, flag: string, at: number) => {
    const box = hostBox(host, at);
    const restricted = rules.flatMap((r): Rule[] => {
      const part = intersect(r.box, box);
      return part ? [{ ...r, box: part }] : [];
    });
    const specs = [...headOf(options), `${flag} lo -j ACCEPT`, ...specsOf(restricted)];
    return specs.map((spec) => `-A ${name} ${spec}`);
  };
  const lines = [
    header(node, id, 'load with: iptables-restore < FILE'),
    `# the firewall of host ${host}: INPUT for packets to it, OUTPUT for packets from it`,
    stateLine(options.stateless, 'conntrack ESTABLISHED,RELATED first'),
    '*filter',
    `:INPUT ${policy} [0:0]`,
    ':FORWARD DROP [0:0]',
    `:OUTPUT ${policy} [0:0]`,
    ...chain('INPUT', '-i', DST),
    ...chain('OUTPUT', '-o', SRC),
    'COMMIT',
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * The FORWARD chain of a firewall: its policy and each rule's match and target, in first-match order, with the
 * element (from 0) each comes from.
 */
export function forwardChain(node: Node): { policy: 'ACCEPT' | 'DROP'; specs: string[]; elements: number[] } {
  const { rules, defaultAllow } = normalisedRules(node);
  const elements = perProtocol(rules).map((r) => r.element);
  return { policy: defaultAllow ? 'ACCEPT' : 'DROP', specs: specsOf(rules), elements };
}

/** Each rule's match and target, as iptables writes them. */
function specsOf(rules: Rule[]): string[] {
  const specs: string[] = [];
  for (const r of perProtocol(rules)) {
    const parts: string[] = [];
    const src = address(r.box, SRC);
    const dst = address(r.box, DST);
    if (!src.any) parts.push(`-s ${cidr(src)}`);
    if (!dst.any) parts.push(`-d ${cidr(dst)}`);
    const proto = protocolOf(r.box);
    if (proto !== 'ip') {
      parts.push(`-p ${proto}`);
      for (const [d, flag] of [
        [SPORT, '--sport'],
        [DPORT, '--dport'],
      ] as const) {
        const [lo, hi] = range(r.box, d);
        if (!isFull(r.box, d)) parts.push(`${flag} ${lo === hi ? lo : `${lo}:${hi}`}`);
      }
    }
    parts.push(`-j ${r.allow ? 'ACCEPT' : 'DROP'}`);
    specs.push(parts.join(' '));
  }
  return specs;
}
