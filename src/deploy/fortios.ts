/**
 * FortiOS CLI: address objects, custom services and policies in first-match order.
 *
 * Stateful by nature, and only so: a FortiGate keeps a session for the traffic a policy accepts and lets its
 * replies back through that session, whatever the policies say of their direction. There is no stateless form to
 * write, so `stateless` is refused (index.ts).
 */
import type { Node } from '../model/types.js';
import { type Box, DPORT, DST, SPORT, SRC } from '../model/space.js';
import { address, type Address, cidr, commonSubsequence, header, normalisedRules, protocolOf, range } from './rules.js';

interface Policy {
  /** What the policy does, whatever its objects are named: the change script compares these. */
  key: string;
  /** Its settings, between `edit ID` and `next`. */
  settings: string[];
}

/** Address objects, custom services and policies of a firewall, objects named with `prefix`. */
function fortiosParts(node: Node, prefix: string) {
  const { rules, defaultAllow } = normalisedRules(node);
  const addresses: string[] = [];
  const services: string[] = [];
  const known = new Map<string, string>();
  const addressName = (a: Address) => {
    if (a.any) return 'all';
    const key = cidr(a);
    let name = known.get(key);
    if (!name) {
      name = `${prefix}-a${known.size + 1}`;
      known.set(key, name);
      const body =
        a.prefix !== undefined
          ? [`        set subnet ${a.ip} ${a.mask}`]
          : ['        set type wildcard', `        set wildcard ${a.ip} ${a.mask}`];
      addresses.push(`    edit "${name}"`, `        set comment "${key}"`, ...body, '    next');
    }
    return name;
  };
  const portRange = (b: Box) => {
    const [dl, dh] = range(b, DPORT);
    const [sl, sh] = range(b, SPORT);
    // As written: a range from port 0 keeps 0 (`0-79`; it once became `1-79`, and `0-0` the empty `1-0`).
    const text = (lo: number, hi: number) => `${lo}-${hi}`;
    return `${text(dl, dh)}:${text(sl, sh)}`;
  };
  const policies: Policy[] = rules.map((r, k) => {
    const proto = protocolOf(r.box);
    let service = 'ALL';
    const ranges: string[] = [];
    if (proto !== 'ip') {
      service = `${prefix}-s${k + 1}`;
      if (proto !== 'udp') ranges.push(`        set tcp-portrange ${portRange(r.box)}`);
      if (proto !== 'tcp') ranges.push(`        set udp-portrange ${portRange(r.box)}`);
      services.push(`    edit "${service}"`, ...ranges, '    next');
    }
    const [src, dst] = [address(r.box, SRC), address(r.box, DST)];
    const action = r.allow ? 'accept' : 'deny';
    return {
      key: [src.any ? 'all' : cidr(src), dst.any ? 'all' : cidr(dst), action, ...ranges].join(' '),
      settings: [
        `        set name "${prefix}-${k + 1}"`,
        '        set srcintf "any"',
        '        set dstintf "any"',
        `        set srcaddr "${addressName(src)}"`,
        `        set dstaddr "${addressName(dst)}"`,
        `        set action ${action}`,
        '        set schedule "always"',
        `        set service "${service}"`,
      ],
    };
  });
  const defaultPolicy = [
    `        set name "${prefix}-default"`,
    '        set srcintf "any"',
    '        set dstintf "any"',
    '        set srcaddr "all"',
    '        set dstaddr "all"',
    `        set action ${defaultAllow ? 'accept' : 'deny'}`,
    '        set schedule "always"',
    '        set service "ALL"',
  ];
  return { addresses, services, policies, defaultPolicy, defaultAllow };
}

const block = (title: string, body: string[]) => (body.length ? [`config ${title}`, ...body, 'end'] : []);

/** FortiOS CLI: address objects, custom services and policies in first-match order. */
export function fortios(node: Node, id: number): string {
  const { addresses, services, policies, defaultPolicy } = fortiosParts(node, `nfv-${id}`);
  const edits = [...policies.map((p) => p.settings), defaultPolicy].flatMap((settings, k) => [
    `    edit ${k + 1}`,
    ...settings,
    '    next',
  ]);
  const sections = [
    header(node, id, 'paste into the FortiOS CLI'),
    '# stateful: as FortiOS policies always are (an accepted session lets its replies back); no stateless form',
    ...block('firewall address', addresses),
    ...block('firewall service custom', services),
    ...block('firewall policy', edits),
  ];
  return `${sections.join('\n')}\n`;
}

/**
 * The FortiOS commands that take a firewall configured from `from` (as `nfv deploy vendor` numbered its policies)
 * to `to`: policies of neither changed nor moved stay, the others are deleted, new ones are added under fresh ids
 * and moved before the policy that follows them; their objects get names of their own (`prefix`).
 */
export function fortiosChange(from: Node, to: Node, what: string, prefix = 'nfv-change'): string {
  const a = fortiosParts(from, 'unused');
  const b = fortiosParts(to, prefix);
  const kept = new Map(
    commonSubsequence(
      a.policies.map((p) => p.key),
      b.policies.map((p) => p.key),
    ).map(([i, j]) => [j, i + 1]),
  );
  const defaultId = a.policies.length + 1;
  let fresh = defaultId;
  const edits: string[] = [];
  const moves: string[] = [];
  b.policies.forEach((p, j) => {
    if (kept.has(j)) return;
    const id = ++fresh;
    edits.push(`    edit ${id}`, ...p.settings, '    next');
    let next = j + 1;
    while (next < b.policies.length && !kept.has(next)) next++;
    moves.push(`    move ${id} before ${next < b.policies.length ? kept.get(next)! : defaultId}`);
  });
  // New policies that follow each other are moved in list order, each before the same anchor, so they stay in order.
  const stays = new Set(kept.values());
  const deletes = a.policies.flatMap((_, i) => (stays.has(i + 1) ? [] : [`    delete ${i + 1}`]));
  const policy =
    a.defaultAllow === b.defaultAllow
      ? []
      : [`    edit ${defaultId}`, `        set action ${b.defaultAllow ? 'accept' : 'deny'}`, '    next'];
  const sections = [
    `# nfv: firewall ${to.name}, ${what}: ${deletes.length} deleted, ${moves.length} added` +
      (policy.length ? `, default ${b.defaultAllow ? 'accept' : 'deny'}` : '') +
      '; for a firewall whose policies nfv deploy vendor numbered',
    ...block('firewall address', b.addresses),
    ...block('firewall service custom', b.services),
    ...block('firewall policy', [...deletes, ...edits, ...moves, ...policy]),
  ];
  return `${sections.join('\n')}\n`;
}
