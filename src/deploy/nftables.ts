/**
 * nftables: one file for `nft -f` (or JSON for `nft -j -f`) that replaces table `ip nfv` in one transaction, a
 * forward chain in first-match order with the default as its policy.
 *
 * The prologue `table ip nfv` + `delete table ip nfv` + `table ip nfv { ... }` loads where the table does not exist
 * yet and reloads where it does, all or nothing: a file nft refuses leaves the running table as it was (nft 1.0.6
 * has no `destroy table`; `flush table` would keep chains and sets of an older layout). Family `ip`: IPv4 only, as
 * the iptables output. Other tables hooked at forward (iptables-nft's `ip filter`, firewalld) still decide too: a
 * packet is forwarded only if every base chain at the hook accepts it.
 *
 * Ports constrain TCP and UDP only, as in the engine and every other format: a rule of protocol ANY with ports
 * matches TCP and UDP packets with those ports (`meta l4proto { tcp, udp } th dport 80`, one rule where iptables
 * needs two) and never a packet of another protocol, which has no ports. A rule of protocol OTHER is one rule,
 * `meta l4proto != { tcp, udp }`, where the other formats need the TCP and UDP parts of every later rule.
 *
 * With `sets`, each run of adjacent rules with the same action is grouped into rules with concatenated anonymous
 * sets: a packet that no earlier run matches gets the run's action if it matches any rule of the run, whatever
 * their order, so the union may be written in any order and first-match verdicts stay as they were. Elements of
 * one set never intersect (the kernel refuses overlapping concatenated intervals, "File exists"): an element inside
 * one already written is left out, one that overlaps goes to another set. Rules with a non-contiguous mask stay
 * single rules. No verdict maps (overlapping elements with different verdicts would be decided silently).
 *
 * Stateful by default: the chain's first rule, `ct state established,related accept`, lets the packets of the
 * connections the rules allowed come back; with `stateless` the chain is the rules alone. The change script treats
 * that rule as any other: both lists start with it, so it stays.
 */
import type { Node } from '../model/types.js';
import { type Box, DPORT, DST, PROTO, SPORT, SRC, contains, intersect, meet } from '../model/space.js';
import {
  type Address,
  type Rule,
  TCP,
  UDP,
  address,
  commonSubsequence,
  header,
  hostBox,
  isFull,
  normalisedRules,
  protocolOf,
  range,
  stateLine,
  type TranslatorOptions,
  withDim,
} from './rules.js';

export interface NftOptions extends TranslatorOptions {
  /** Group runs of adjacent same-action rules into concatenated anonymous sets. */
  sets?: boolean;
}

/** One rule of libnftables JSON: its expressions. */
type Expr = Record<string, unknown>;

/** A rule of the chain as `nft list` prints it, and as libnftables JSON expressions. */
export interface NftRule {
  text: string;
  expr: Expr[];
}

const FAMILY = 'ip';
const TABLE = 'nfv';
const CHAIN = 'forward';
const CHAIN_TYPE = 'type filter hook forward priority filter;';

const L4 = ['tcp', 'udp'] as const;
const payload = (protocol: string, field: string): Expr => ({ payload: { protocol, field } });
const l4proto: Expr = { meta: { key: 'l4proto' } };
const match = (left: unknown, right: unknown, op: '==' | '!=' | 'in' = '=='): Expr => ({ match: { op, left, right } });

/** An address as nft prints it: a bare address for /32, `A/P` for a prefix, `0.0.0.0/0` for any. */
const addressText = (a: Address) => (a.prefix === 32 ? a.ip : `${a.ip}/${a.prefix ?? 0}`);
const addressValue = (a: Address): unknown => (a.prefix === 32 ? a.ip : { prefix: { addr: a.ip, len: a.prefix ?? 0 } });
const portText = ([lo, hi]: readonly [number, number]) => (lo === hi ? `${lo}` : `${lo}-${hi}`);
const portValue = ([lo, hi]: readonly [number, number]): unknown => (lo === hi ? lo : { range: [lo, hi] });

const ported = (b: Box) => !isFull(b, SPORT) || !isFull(b, DPORT);

/** One rule, its parts in the order nft lists them: source, destination, protocol and ports. */
function single(b: Box, allow: boolean): NftRule {
  const text: string[] = [];
  const expr: Expr[] = [];
  for (const [at, field] of [
    [SRC, 'saddr'],
    [DST, 'daddr'],
  ] as const) {
    const a = address(b, at);
    if (a.any) continue;
    if (a.prefix !== undefined) {
      text.push(`ip ${field} ${addressText(a)}`);
      expr.push(match(payload('ip', field), addressValue(a)));
    } else {
      text.push(`ip ${field} & ${a.mask} == ${a.ip}`);
      expr.push(match({ '&': [payload('ip', field), a.mask] }, a.ip));
    }
  }
  const protocol = protocolOf(b);
  const ports = ported(b);
  const one = protocol === 'tcp' || protocol === 'udp' ? protocol : undefined;
  if (protocol === 'other') {
    text.push('meta l4proto != { tcp, udp }');
    expr.push(match(l4proto, { set: [...L4] }, '!='));
  } else if (!one && (protocol === 'tcp+udp' || ports)) {
    text.push('meta l4proto { tcp, udp }');
    expr.push(match(l4proto, { set: [...L4] }));
  } else if (one && !ports) {
    text.push(`meta l4proto ${one}`);
    expr.push(match(l4proto, one));
  }
  const [sport, dport] = [range(b, SPORT), range(b, DPORT)];
  if (!one && sport[0] === sport[1] && dport[0] === dport[1]) {
    // nft would merge `th sport N th dport M` into one raw 32-bit match and list it so (`@th,0,32 0x...`): as a
    // one-element concatenation it is listed as written, which the change script's comparison needs.
    text.push(`th sport . th dport { ${sport[0]} . ${dport[0]} }`);
    expr.push(
      match({ concat: [payload('th', 'sport'), payload('th', 'dport')] }, { set: [{ concat: [sport[0], dport[0]] }] }),
    );
  } else if (ports) {
    const proto = one ?? 'th'; // tcp dport implies meta l4proto tcp
    for (const [d, field] of [
      [SPORT, 'sport'],
      [DPORT, 'dport'],
    ] as const) {
      if (isFull(b, d)) continue;
      text.push(`${proto} ${field} ${portText(range(b, d))}`);
      expr.push(match(payload(proto, field), portValue(range(b, d))));
    }
  }
  text.push(allow ? 'accept' : 'drop');
  expr.push({ [allow ? 'accept' : 'drop']: null });
  return { text: text.join(' '), expr };
}

/**
 * How a rule fits a concatenated set: `ip` (all protocols, no ports: source . destination) or `l4` (TCP or UDP:
 * source . destination . protocol . source port . destination port, one element per protocol); undefined when an
 * address has a non-contiguous mask, which a set element cannot say.
 */
type Shape = 'ip' | 'l4';
function shapeOf(b: Box): Shape | undefined {
  if (address(b, SRC).prefix === undefined || address(b, DST).prefix === undefined) return undefined;
  if (protocolOf(b) === 'other') return undefined;
  return protocolOf(b) === 'ip' ? 'ip' : 'l4';
}
function elementsOf(b: Box, shape: Shape): Box[] {
  if (shape === 'ip') return [b];
  const [lo, hi] = range(b, PROTO);
  return [TCP, UDP].filter((p) => p >= lo && (p <= hi || hi === 2)).map((p) => withDim(b, PROTO, p, p));
}

const CONCAT: Record<Shape, { text: string; keys: Expr[] }> = {
  ip: { text: 'ip saddr . ip daddr', keys: [payload('ip', 'saddr'), payload('ip', 'daddr')] },
  l4: {
    text: 'meta l4proto { tcp, udp } ip saddr . ip daddr . meta l4proto . th sport . th dport',
    keys: [payload('ip', 'saddr'), payload('ip', 'daddr'), l4proto, payload('th', 'sport'), payload('th', 'dport')],
  },
};

function setRule(shape: Shape, elements: Box[], allow: boolean): NftRule {
  const texts: string[] = [];
  const values: Expr[] = [];
  for (const e of elements) {
    const [src, dst] = [address(e, SRC), address(e, DST)];
    const parts = [addressText(src), addressText(dst)];
    const value: unknown[] = [addressValue(src), addressValue(dst)];
    if (shape === 'l4') {
      const name = L4[range(e, PROTO)[0]]!;
      parts.push(name, portText(range(e, SPORT)), portText(range(e, DPORT)));
      value.push(name, portValue(range(e, SPORT)), portValue(range(e, DPORT)));
    }
    texts.push(parts.join(' . '));
    values.push({ concat: value });
  }
  const verdict = allow ? 'accept' : 'drop';
  const guard = shape === 'l4' ? [match(l4proto, { set: [...L4] })] : [];
  return {
    text: `${CONCAT[shape].text} { ${texts.join(', ')} } ${verdict}`,
    expr: [...guard, match({ concat: CONCAT[shape].keys }, { set: values }), { [verdict]: null }],
  };
}

/** One run of adjacent same-action rules as rules with sets (singles where a set would hold one rule). */
function groupedRun(run: Box[], allow: boolean): NftRule[] {
  type Group = { shape: Shape; elements: Box[]; from: Set<number> };
  type Item = { group: Group } | { box: Box };
  const items: Item[] = [];
  const groups: Group[] = [];
  const elementsOfRule: Box[][] = [];
  run.forEach((b, k) => {
    const shape = shapeOf(b);
    if (!shape) return items.push({ box: b });
    elementsOfRule[k] = elementsOf(b, shape);
    for (const e of elementsOfRule[k]) {
      const same = groups.filter((g) => g.shape === shape);
      // Inside an element already written: the union of the run is the same without it.
      if (same.some((g) => g.elements.some((f) => contains(f, e)))) continue;
      let group = same.find((g) => !g.elements.some((f) => meet(f, e)));
      if (!group) {
        group = { shape, elements: [], from: new Set() };
        groups.push(group);
        items.push({ group });
      }
      group.elements.push(e);
      group.from.add(k);
    }
  });
  return items.map((item) => {
    if ('box' in item) return single(item.box, allow);
    const { shape, elements, from } = item.group;
    const [only] = [...from];
    // A group of one rule's elements, all of them: that rule as it is.
    if (from.size === 1 && elements.length === elementsOfRule[only!]!.length) return single(run[only!]!, allow);
    if (elements.length === 1) return single(elements[0]!, allow);
    return setRule(shape, elements, allow);
  });
}

/** The first rule of a stateful chain, as nft lists it. */
const STATEFUL_RULE: NftRule = {
  text: 'ct state established,related accept',
  expr: [match({ ct: { key: 'state' } }, ['established', 'related'], 'in'), { accept: null }],
};

/** The forward chain of a firewall: its policy and rules in first-match order (the stateful rule first). */
export function nftChain(
  node: Node,
  options: NftOptions = {},
  within?: Box,
): { policy: 'accept' | 'drop'; rules: NftRule[] } {
  const normalised = normalisedRules(node, { otherNative: true });
  const { defaultAllow } = normalised;
  // A host firewall's chain: the rules for the packets to (or from) the host only.
  const rules = within
    ? normalised.rules.flatMap((r): Rule[] => {
        const part = intersect(r.box, within);
        return part ? [{ ...r, box: part }] : [];
      })
    : normalised.rules;
  const policy = defaultAllow ? 'accept' : 'drop';
  const out: NftRule[] = options.stateless ? [] : [STATEFUL_RULE];
  if (!options.sets) return { policy, rules: [...out, ...rules.map((r) => single(r.box, r.allow))] };
  for (let k = 0; k < rules.length;) {
    let end = k;
    while (end < rules.length && rules[end]!.allow === rules[k]!.allow) end++;
    out.push(
      ...groupedRun(
        rules.slice(k, end).map((r: Rule) => r.box),
        rules[k]!.allow,
      ),
    );
    k = end;
  }
  return { policy, rules: out };
}

const policyLine = (policy: string) => `${CHAIN_TYPE} policy ${policy};`;

export function nftables(node: Node, id: number, options: NftOptions = {}): string {
  if (options.host !== undefined) return nftHost(node, id, options.host, options);
  const { policy, rules } = nftChain(node, options);
  const lines = [
    header(node, id, 'load with: nft -f FILE'),
    stateLine(options.stateless, 'ct state established,related first'),
    `# replaces table ${FAMILY} ${TABLE} in one transaction (a file nft refuses changes nothing); other tables at`,
    '# the forward hook (iptables-nft, firewalld) still decide: a packet goes through only if all of them accept it',
    `table ${FAMILY} ${TABLE}`,
    `delete table ${FAMILY} ${TABLE}`,
    `table ${FAMILY} ${TABLE} {`,
    `\tchain ${CHAIN} {`,
    `\t\t${policyLine(policy)}`,
    ...rules.map((r) => `\t\t${r.text}`),
    '\t}',
    '}',
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * A host firewall's node as the host's own chains (docs/SEMANTICS.md "Host firewalls"): `input` has the node's
 * rules for packets to the host, `output` for packets from it, each with the node's default as policy, after
 * loopback (which never crosses the node: a host that drops it breaks).
 */
function nftHost(node: Node, id: number, host: string, options: NftOptions): string {
  const chain = (name: string, at: number, lo: string) => {
    const { policy, rules } = nftChain(node, options, hostBox(host, at));
    const [first, rest] = options.stateless ? [[], rules] : [rules.slice(0, 1), rules.slice(1)];
    return [
      `\tchain ${name} {`,
      `\t\ttype filter hook ${name} priority filter; policy ${policy};`,
      ...[...first.map((r) => r.text), `${lo} "lo" accept`, ...rest.map((r) => r.text)].map((t) => `\t\t${t}`),
      '\t}',
    ];
  };
  const lines = [
    header(node, id, 'load with: nft -f FILE'),
    `# the firewall of host ${host}: chain input for packets to it, output for packets from it`,
    stateLine(options.stateless, 'ct state established,related first'),
    `table ${FAMILY} ${TABLE}`,
    `delete table ${FAMILY} ${TABLE}`,
    `table ${FAMILY} ${TABLE} {`,
    ...chain('input', DST, 'iifname'),
    ...chain('output', SRC, 'oifname'),
    '}',
  ];
  return `${lines.join('\n')}\n`;
}

/** The same content as libnftables JSON, for `nft -j -f FILE`: one command per line. */
export function nftablesJson(node: Node, _id: number, options: NftOptions = {}): string {
  const { policy, rules } = nftChain(node, options);
  const table = { family: FAMILY, name: TABLE };
  const chain = { family: FAMILY, table: TABLE, name: CHAIN };
  const commands: unknown[] = [
    { metainfo: { json_schema_version: 1 } },
    { add: { table } },
    { delete: { table } },
    { add: { table } },
    { add: { chain: { ...chain, type: 'filter', hook: 'forward', prio: 0, policy } } },
    ...rules.map((r) => ({ add: { rule: { family: FAMILY, table: TABLE, chain: CHAIN, expr: r.expr } } })),
  ];
  return `{"nftables": [\n${commands.map((c) => `  ${JSON.stringify(c)}`).join(',\n')}\n]}\n`;
}

/**
 * The awk program of a change script's check: reads the list the change starts from on stdin, lists the chain with
 * `nft -a`, and prints its rules' handles when the two are the same line for line (each set's elements sorted: nft
 * lists a set of single values in its hash order); exits 2 when nft listed nothing (no chain), 1 when they differ.
 * One awk for the whole check: a process per step (sed, printf, awk pipelines) cost more than the check.
 */
const check = (where: string) => [
  "awk '",
  '  function canonical(s,  out, i, rest, j, n, e, a, b, v) {',
  '    out = ""',
  '    while ((i = index(s, "{ ")) > 0) {',
  '      rest = substr(s, i + 2); j = index(rest, " }"); n = split(substr(rest, 1, j - 1), e, ", ")',
  '      for (a = 2; a <= n; a++) {',
  '        v = e[a]; for (b = a - 1; b > 0 && (e[b] "") > (v ""); b--) e[b + 1] = e[b]; e[b + 1] = v',
  '      }',
  '      out = out substr(s, 1, i + 1) e[1]; for (a = 2; a <= n; a++) out = out ", " e[a]; out = out " }"',
  '      s = substr(rest, j + 2)',
  '    }',
  '    return out s',
  '  }',
  '  { expected[++n] = canonical($0) }',
  '  END {',
  `    cmd = "nft -a list chain ${where}"`,
  '    while ((cmd | getline line) > 0) {',
  '      listed++',
  '      if (line ~ /^\\t\\ttype /) got[++m] = canonical(substr(line, 3))',
  '      else if (line ~ /^\\t\\t/ && match(line, / # handle [0-9]+$/)) {',
  '        got[++m] = canonical(substr(line, 3, RSTART - 3)); handles = handles " " substr(line, RSTART + 10)',
  '      }',
  '    }',
  '    if (!listed) exit 2',
  '    if (m != n) exit 1',
  '    for (k = 1; k <= n; k++) if (got[k] != expected[k]) exit 1',
  '    print handles',
  '  }',
  "' <<'NFV'",
];

/**
 * A shell script that takes a forward chain loaded from `from` (as `nft -f` of `nfv deploy nftables` left it) to
 * the one of `to`. Rule handles are not positions, so the script reads them when it runs; it first compares the
 * chain as nft lists it with the list it starts from and refuses (exit 1, nothing changed) a chain that drifted.
 * Rules of neither changed nor moved stay (a longest common subsequence of the two lists); the others are deleted
 * and inserted before the next kept rule (or added at the end), the policy set when it changes: one `nft -f`
 * transaction, all or nothing.
 */
export function nftablesChange(from: Node, to: Node, what: string, options: NftOptions = {}): string {
  const [a, b] = [nftChain(from, options), nftChain(to, options)];
  const [old, next] = [a.rules.map((r) => r.text), b.rules.map((r) => r.text)];
  const common = commonSubsequence(old, next);
  const handleOf = new Map(common.map(([i, j]) => [j, `\${${i + 1}}`]));
  const stays = new Set(common.map(([i]) => i));
  const deletes = old.flatMap((_, i) =>
    stays.has(i) ? [] : [`delete rule ${FAMILY} ${TABLE} ${CHAIN} handle \${${i + 1}}`],
  );
  const inserts: string[] = [];
  next.forEach((text, j) => {
    if (handleOf.has(j)) return;
    let k = j + 1;
    while (k < next.length && !handleOf.has(k)) k++;
    inserts.push(
      k < next.length
        ? `insert rule ${FAMILY} ${TABLE} ${CHAIN} position ${handleOf.get(k)} ${text}`
        : `add rule ${FAMILY} ${TABLE} ${CHAIN} ${text}`,
    );
  });
  const policy = a.policy === b.policy ? [] : [`chain ${FAMILY} ${TABLE} ${CHAIN} { ${policyLine(b.policy)} }`];
  const where = `${FAMILY} ${TABLE} ${CHAIN}`;
  const lines = [
    '#!/bin/sh',
    `# nfv: firewall ${to.name}, ${what}: ${deletes.length} deleted, ${inserts.length} inserted, ` +
      `policy ${a.policy === b.policy ? b.policy : `${a.policy} -> ${b.policy}`}`,
    '# run as root on a firewall that runs the earlier list as nfv deploy nftables' +
      `${options.stateless ? ' --stateless' : ''} wrote it (table ${FAMILY} ${TABLE},`,
    `# chain ${CHAIN}${options.sets ? ', with --sets' : ''}); a chain that differs from that list is refused and ` +
      'left as it is',
    'set -e',
    "# the chain as nft lists it against the list this change starts from, and its rules' handles",
    'handles=$(' + check(where).join('\n'),
    policyLine(a.policy),
    ...old,
    'NFV',
    ') || {',
    `  if [ $? = 2 ]; then echo "nfv: no chain ${where} to change" >&2`,
    `  else echo "nfv: chain ${where} is not the list this change starts from (it changed since it was deployed)" >&2`,
    '  fi',
    '  exit 1',
    '}',
    'set -- $handles',
    'nft -f - <<NFV',
    ...deletes,
    ...inserts,
    ...policy,
    'NFV',
  ];
  return `${lines.join('\n')}\n`;
}
