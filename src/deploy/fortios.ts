/** FortiOS CLI: address objects, custom services and policies in first-match order. */
import type { Node } from '../model/types.js';
import { type Box, DPORT, DST, SPORT, SRC } from '../model/space.js';
import { address, type Address, cidr, header, isFull, normalisedRules, protocolOf, range } from './rules.js';

/** FortiOS CLI: address objects, custom services and policies in first-match order. */
export function fortios(node: Node, id: number): string {
  const { rules, defaultAllow } = normalisedRules(node);
  const addresses: string[] = [];
  const services: string[] = [];
  const policies: string[] = [];
  const known = new Map<string, string>();
  const addressName = (a: Address) => {
    if (a.any) return 'all';
    const key = cidr(a);
    let name = known.get(key);
    if (!name) {
      name = `nfv-${id}-a${known.size + 1}`;
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
    const text = (lo: number, hi: number) => `${Math.max(lo, 1)}-${hi}`;
    return `${text(dl, dh)}:${text(sl, sh)}`;
  };
  rules.forEach((r, k) => {
    const proto = protocolOf(r.box);
    const ported = !isFull(r.box, SPORT) || !isFull(r.box, DPORT);
    let service = 'ALL';
    if (proto !== 'ip' || ported) {
      service = `nfv-${id}-s${k + 1}`;
      const lines = [`    edit "${service}"`];
      if (proto !== 'udp') lines.push(`        set tcp-portrange ${portRange(r.box)}`);
      if (proto !== 'tcp') lines.push(`        set udp-portrange ${portRange(r.box)}`);
      services.push(...lines, '    next');
    }
    policies.push(
      `    edit ${k + 1}`,
      `        set name "nfv-${id}-${k + 1}"`,
      '        set srcintf "any"',
      '        set dstintf "any"',
      `        set srcaddr "${addressName(address(r.box, SRC))}"`,
      `        set dstaddr "${addressName(address(r.box, DST))}"`,
      `        set action ${r.allow ? 'accept' : 'deny'}`,
      '        set schedule "always"',
      `        set service "${service}"`,
      '    next',
    );
  });
  policies.push(
    `    edit ${rules.length + 1}`,
    `        set name "nfv-${id}-default"`,
    '        set srcintf "any"',
    '        set dstintf "any"',
    '        set srcaddr "all"',
    '        set dstaddr "all"',
    `        set action ${defaultAllow ? 'accept' : 'deny'}`,
    '        set schedule "always"',
    '        set service "ALL"',
    '    next',
  );
  const block = (title: string, body: string[]) => (body.length ? [`config ${title}`, ...body, 'end'] : []);
  const sections = [
    header(node, id, 'paste into the FortiOS CLI'),
    ...block('firewall address', addresses),
    ...block('firewall service custom', services),
    ...block('firewall policy', policies),
  ];
  return `${sections.join('\n')}\n`;
}
