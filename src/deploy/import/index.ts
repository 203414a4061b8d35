/**
 * Import of a live firewall (firewall-io.md B): iptables-save text or nft JSON read into a rule set, unfolded into
 * one first-match list, each line reached classified (exact, new-connection, no-verdict, approximated, refused),
 * and given as a rule list for the analyses and as a FIREWALL node for `/fwd` and NFV documents.
 */
import { badRequest } from '../../model/errors.js';
import { MAX_RULES_PER_LINE } from '../../model/limits.js';
import type { Approximation } from '../../model/approximation.js';
import type { Elements, Node } from '../../model/types.js';
import { parseAddress } from '../../model/address.js';
import { DST, SRC, UNIVERSE, type Box } from '../../model/space.js';
import type { Line, RuleList } from '../analysis/list.js';
import { ExceptSpeller, elementsOf, ruleCount, tooMany } from './elements.js';
import { readIptables, type ImportOptions } from './iptables.js';
import { Refusal } from './matches.js';
import { longestPrefix, type InterfaceMap } from './routes.js';
import { readNftables } from './nftables.js';
import { intersectRegions, withBounds, type LineClass, type LiveRule, type LiveRuleset } from './ruleset.js';
import type { NatReading } from './nat.js';
import { ruleEntries, unfold, type Entry } from './unfold.js';

export { looksLikeIptables, looksLikeNftJson } from './detect.js';
export { parseIpsets, Refusal, type IpSet } from './matches.js';
export { macMap, routeMap, type InterfaceMap, type MacMap } from './routes.js';
export type { ImportOptions } from './iptables.js';
export { explain, packetBox, parsePacket, type Explanation, type ExplainPacket, type Step } from './explain.js';
export type { LineClass, LiveRuleset } from './ruleset.js';
export type { NatReading } from './nat.js';

export type ImportFormat = 'iptables' | 'nftables';

export interface LineReport {
  /** `file:line` (iptables) or `table/chain/handle N` (nft). */
  where: string;
  line: number;
  text: string;
  class: LineClass;
  /** Why the line is approximated or refused, or what its reading was (matches no new connection, ...). */
  reason?: string;
}

export interface ImportReport {
  file: string;
  format: ImportFormat;
  chain: string;
  defaultAction: 'ALLOW' | 'DENY';
  /** Lines reached, by class. */
  counts: Record<LineClass, number>;
  /** Whether some line reached is approximated: then the import has a may and a must list (B.5). */
  approximated: boolean;
  lines: LineReport[];
  notes: string[];
  /**
   * With --nat-address: the NAT node the translations became, and which line gave what (nat.ts); a list of them,
   * one per interface, with `--nat-address IFACE=ADDR,IFACE2=ADDR2` (one node keeps the single shape readers know).
   */
  nat?: NatReading | NatReading[];
}

export interface Imported {
  report: ImportReport;
  entries: Entry[];
  defaultAllow: boolean;
  /** The entries as plain boxes, for nfv rules (no except boxes): unfolded again when asked for. */
  plain: () => Entry[];
  /** The rule set as read: its chains, for a change written against the live file (live.ts). */
  set: LiveRuleset;
  /** With a host (`--host`): its INPUT and OUTPUT rule sets, `set` being the INPUT one. */
  host?: { address: string; input: LiveRuleset; output: LiveRuleset };
}

const CLASSES: LineClass[] = ['exact', 'new-connection', 'no-verdict', 'approximated', 'refused'];

function classOf(rule: LiveRule): LineClass {
  if (rule.refused) return 'refused';
  if (rule.verdict.kind === 'none') return 'no-verdict';
  if (rule.unknown.length) return 'approximated';
  return rule.newConnection ? 'new-connection' : 'exact';
}

function reasonOf(rule: LiveRule): string | undefined {
  const why = rule.refused ?? (rule.unknown.length ? rule.unknown.join('; ') : rule.notes.join('; '));
  return why || undefined;
}

/** Reads a live rule set; refuses it (exit 2) when a line reached cannot be imported, naming file:line and why. */
export function importRules(format: ImportFormat, text: string, file: string, options: ImportOptions = {}): Imported {
  if (options.natAddress !== undefined && options.host !== undefined)
    throw badRequest(`natAddress: --nat-address and --host ${options.host}: a host firewall forwards nothing`);
  if (options.natAddress !== undefined && options.ignoreNat)
    throw badRequest('natAddress: --nat-address reads the translations, --ignore-nat ignores them; give one');
  if (options.host !== undefined) return importHost(format, text, file, options.host, options);
  let set: LiveRuleset;
  try {
    set = format === 'iptables' ? readIptables(text, file, options) : readNftables(text, file, options);
  } catch (e) {
    if (e instanceof Refusal) throw badRequest(`${file}: ${e.message}`);
    throw e;
  }
  const { entries, defaultAllow, reached } = unfold(set);
  const lines = [...reached, ...set.checked].map((rule) => {
    const reason = reasonOf(rule);
    return { where: rule.where, line: rule.line, text: rule.text, class: classOf(rule), ...(reason ? { reason } : {}) };
  });
  const tally = Object.fromEntries(CLASSES.map((c) => [c, 0])) as Record<LineClass, number>;
  for (const l of lines) tally[l.class]++;
  const refused = lines.filter((l) => l.class === 'refused');
  if (refused.length) {
    const more = refused.length > 1 ? ` (and ${refused.length - 1} more lines refused)` : '';
    throw badRequest(`${refused[0]!.where}: ${refused[0]!.reason}${more}`);
  }
  const report: ImportReport = {
    file,
    format,
    chain: set.path[set.path.length - 1]!.key,
    defaultAction: defaultAllow ? 'ALLOW' : 'DENY',
    counts: tally,
    approximated: tally.approximated > 0,
    lines,
    notes: set.notes,
    ...(set.nat ? { nat: set.nat.length === 1 ? set.nat[0]! : set.nat } : {}),
  };
  return { report, entries, plain: () => ruleEntries(set, entries), defaultAllow, set };
}

/** The octets of `--host`: one IPv4 address, the name of an end host of the graph. */
export function hostOctets(host: string): number[] {
  const octets = parseAddress(host);
  if (!octets || octets.includes(-1) || host.trim() !== host)
    throw badRequest(`host: ${JSON.stringify(host)} is not an IPv4 address (--host: the end host the rules protect)`);
  return octets;
}

/** The packets to an address (`at` DST) or from it (`at` SRC). */
export const addressRegion = (octets: readonly number[], at: number): Box[] => [
  withBounds(
    UNIVERSE,
    [0, 1, 2, 3].map((k) => at + k),
    octets.flatMap((o) => [o, o]),
  ),
];

/**
 * A host firewall as one first-match list for a FIREWALL node placed between the host and its neighbours
 * (docs/SEMANTICS.md, "Host firewalls"): the INPUT entries restricted to packets to the host, then INPUT's policy
 * for the rest of them, then the OUTPUT entries restricted to packets from it, then OUTPUT's policy for those;
 * default DENY, as the host forwards nothing. A packet from the host to itself never crosses the node; INPUT
 * would decide it here.
 */
function importHost(format: ImportFormat, text: string, file: string, host: string, options: ImportOptions): Imported {
  const octets = hostOctets(host);
  if (options.chain !== undefined)
    throw badRequest(`chain: --chain ${options.chain} and --host ${host}: --host reads INPUT and OUTPUT both`);
  const [inName, outName] = format === 'iptables' ? ['INPUT', 'OUTPUT'] : ['input', 'output'];
  // The host's loopback traffic never crosses the node: -i lo / -o lo match none of its packets (unless mapped).
  const iface = new Map(options.iface ?? []);
  if (!iface.has('lo')) iface.set('lo', []);
  const read = (chain: string) => importRules(format, text, file, { ...options, iface, host: undefined, chain });
  const input = read(inName);
  const output = read(outName);
  const sides = (plain: boolean): Entry[] => {
    const entries: Entry[] = [];
    side(entries, input, plain, addressRegion(octets, DST), input.report.chain);
    side(entries, output, plain, addressRegion(octets, SRC), output.report.chain);
    return entries;
  };
  const side = (entries: Entry[], part: Imported, plain: boolean, region: Box[], chain: string) => {
    for (const e of plain ? part.plain() : part.entries) {
      const r = intersectRegions(e.region, region);
      // A wide drop (unfold.ts) is restricted alike: its packets beyond the host's would be dropped here too.
      const wide = e.wide && intersectRegions(e.wide, region);
      if (r.length) entries.push({ ...e, region: r, ...(wide ? { wide } : {}) });
    }
    const policy = part.defaultAllow ? 'ACCEPT' : 'DROP';
    const rule: LiveRule = {
      where: `${file}: policy of ${chain}`,
      line: 0,
      text: `:${chain} ${policy}`,
      region,
      unknown: [],
      newConnection: false,
      notes: [],
      verdict: { kind: part.defaultAllow ? 'accept' : 'drop' },
    };
    entries.push({ rule, allow: part.defaultAllow, region, except: [], maybe: false });
  };
  // Lines both reads judge (nat, mangle PREROUTING) are said once.
  const seen = new Set<string>();
  const lines = [...input.report.lines, ...output.report.lines].filter((l) => !seen.has(l.where) && seen.add(l.where));
  const counts = Object.fromEntries(CLASSES.map((c) => [c, 0])) as Record<LineClass, number>;
  for (const l of lines) counts[l.class]++;
  const notes = [...new Set([...input.report.notes, ...output.report.notes])];
  notes.push(
    `host ${host}: ${input.report.chain} decides the packets to it, ${output.report.chain} the packets from it; ` +
      'other packets are denied (a host forwards nothing)',
  );
  if (!options.iface?.has('lo'))
    notes.push(`host ${host}: lines on interface lo match nothing here (loopback never crosses the firewall node)`);
  const report: ImportReport = {
    file,
    format,
    chain: `${input.report.chain} to ${host}, ${output.report.chain} from ${host}`,
    defaultAction: 'DENY',
    counts,
    approximated: counts.approximated > 0,
    lines,
    notes,
  };
  return {
    report,
    entries: sides(false),
    plain: () => sides(true),
    defaultAllow: false,
    set: input.set,
    host: { address: host, input: input.set, output: output.set },
  };
}

export type { Approximation };

/**
 * The entries of one list: exact entries as they are; maybe entries by B.5 (may: maybe accepts taken, maybe drops
 * left out; must: the opposite). With no maybe entry both are the exact list.
 */
export function listEntries(imported: Imported, which: Approximation = 'may', plain = false): Entry[] {
  return (plain ? imported.plain() : imported.entries).filter((e) => !e.maybe || e.allow === (which === 'may'));
}

/** The import as a rule list for the analyses: one line per unfolded entry, named by its live line. */
export function importedList(imported: Imported, which: Approximation = 'may'): RuleList {
  const { report } = imported;
  // Each entry keeps its place among all entries: the may and must lists' lines of one entry are matched by it.
  const kept = imported.entries.flatMap((e, entry) =>
    !e.maybe || e.allow === (which === 'may') ? [{ e, entry }] : [],
  );
  const lines = kept.map(({ e, entry }, k): Line => ({
    position: k + 1,
    allow: e.allow,
    boxes: e.region,
    ...(e.except.length ? { except: e.except } : {}),
    text: `${e.rule.where}: ${e.rule.text}`,
    origin: { file: report.file, line: e.rule.line, where: e.rule.where },
    entry,
    ...(e.maybe ? { maybe: true } : {}),
  }));
  const approx = report.approximated ? ` (${which} list: ${report.counts.approximated} lines approximated)` : '';
  return { name: `${report.file}, ${report.chain}${approx}`, lines, defaultAllow: imported.defaultAllow };
}

/** A live line and the ids of the nfv rules it became. */
export interface LineElements {
  where: string;
  line: number;
  text: string;
  elements: number[];
}

/**
 * The import as a FIREWALL node named `name`: each entry's rules in order, ids from 1, each with the live line it
 * came from (`origin`), and which live line became which rules. An approximated import gives one list that carries
 * both (B.5): a rule of the may list only has `approximation="may"`, of the must list only `"must"`; with `which`,
 * only that list, without the attribute.
 */
export function importedNode(
  imported: Imported,
  name: string,
  which?: Approximation,
  plain = false,
): { node: Node; origins: LineElements[] } {
  // One entry per line reached, its RETURNs' packets as except boxes (docs/SEMANTICS.md "Rules with except"); with
  // `plain`, the rule set unfolded again without them (unfold.ts, `repeat`), as VEREFOO's plain rules.
  const entries =
    which === undefined ? (plain ? imported.plain() : imported.entries) : listEntries(imported, which, plain);
  const speller = new ExceptSpeller();
  // A line whose nfv rules would be too many is refused; the analyses read it exactly.
  const counts = new Map<LiveRule, number>();
  for (const e of entries) counts.set(e.rule, (counts.get(e.rule) ?? 0) + ruleCount(e, plain));
  const over = [...counts].filter(([, n]) => n > MAX_RULES_PER_LINE);
  if (over.length) {
    const more = over.length > 1 ? ` (and ${over.length - 1} more lines)` : '';
    throw badRequest(`${over[0]![0].where}: ${tooMany(over[0]![1])}${more}`);
  }
  const elements: Elements[] = [];
  const origins = new Map<LiveRule, LineElements>();
  for (const e of entries) {
    const origin = origins.get(e.rule) ?? { where: e.rule.where, line: e.rule.line, text: e.rule.text, elements: [] };
    origins.set(e.rule, origin);
    // A maybe accept belongs to the may list only, a maybe drop to the must list only.
    const only: Pick<Elements, 'approximation'> =
      which === undefined && e.maybe ? { approximation: e.allow ? 'may' : 'must' } : {};
    for (const el of elementsOf(e, speller, plain)) {
      const id = elements.length + 1;
      elements.push({ id, ...el, ...only, origin: e.rule.where.slice(0, 200) });
      origin.elements.push(id);
    }
  }
  const node: Node = {
    name,
    functionalType: 'FIREWALL',
    configuration: {
      name: `${imported.report.format} ${imported.report.file}`.slice(0, 200),
      firewall: { defaultAction: imported.defaultAllow ? 'ALLOW' : 'DENY', elements },
    },
  };
  return { node, origins: [...origins.values()] };
}

/**
 * The NAT node of an import with --nat-address (docs/SEMANTICS.md, "Port forwards and masquerading"): named by the
 * router's outside address, with the forward table of its DNAT lines, hiding the translated source networks. It
 * goes on the outside of the firewall node: what comes from outside is translated before the filter, what goes out
 * after it. With an address per interface, one NAT node each, on that interface's side.
 */
export function importedNats(imported: Imported): Node[] {
  const read = imported.report.nat;
  return (read === undefined ? [] : Array.isArray(read) ? read : [read]).map((nat) => ({
    name: nat.address,
    functionalType: 'NAT',
    configuration: {
      name: `${imported.report.format} ${imported.report.file} nat`.slice(0, 200),
      nat: {
        ...(nat.sources.length ? { source: [...nat.sources] } : {}),
        ...(nat.forwards.length ? { forward: nat.forwards.map(({ where: _, ...f }) => f) } : {}),
        ...(nat.translates.length ? { translate: nat.translates.map(({ where: _, ...f }) => f) } : {}),
      },
    },
  }));
}

/**
 * `--iface NAME=CIDR[,CIDR...]` values as a map, each address checked; lists that overlap are read by longest
 * prefix, as a router routes them (routes.ts), added to the routing table of `--routes` when given.
 */
export function interfaceMap(values: readonly string[], table?: { text: string; file: string }): InterfaceMap {
  const map: InterfaceMap = new Map();
  for (const v of values) {
    const m = /^([^=\s]{1,15})=(\S+)$/.exec(v);
    if (!m) throw badRequest(`--iface ${v}: give NAME=ADDRESS[/P][,ADDRESS[/P]...]`);
    const addresses = m[2]!.split(',');
    for (const a of addresses)
      if (
        !/^\d{1,3}(\.\d{1,3}){3}(\/\d{1,2})?$/.test(a) ||
        a.split(/[./]/).some((n, k) => Number(n) > (k < 4 ? 255 : 32))
      )
        throw badRequest(`--iface ${v}: ${a} is not an IPv4 prefix`);
    map.set(m[1]!, [...(map.get(m[1]!) ?? []), ...addresses]);
  }
  return longestPrefix(map, table);
}
