/**
 * A reconfigured imported firewall's change, written against the live file's own lines (firewall-io.md B.8):
 * `iptables-restore --noflush` input that deletes the live lines the reconfiguration removed (`-D CHAIN n` per
 * chain, highest position first, in whichever table the line is), inserts the new rules into the path's filter
 * chain right after its leading lines that match no new connection (ESTABLISHED, INVALID: inserting above them
 * would drop the replies of connections the stateless model thinks unaffected), and sets the policy when the
 * default flips.
 *
 * A live line is kept only when every rule it became is kept. Before the script is given, it is applied here to
 * the live text and the result imported again: it must decide every packet as the reconfigured rules do (an empty
 * `diff`), or the change is refused. The engine keeps or removes the rules of one live line together (their
 * `origin`), so a line is never cut in two; the check stays for a change written by other means.
 */
import { badRequest } from '../../model/errors.js';
import { plural } from '../../model/words.js';
import type { Elements, Node } from '../../model/types.js';
import { diff } from '../analysis/diff.js';
import { elementText, listOfNode } from '../analysis/list.js';
import { forwardChain } from '../iptables.js';
import { importRules, importedList, importedNode, type ImportOptions } from './index.js';
import type { LiveChain, LiveRule } from './ruleset.js';

const rulesOf = (node: Node): Elements[] => node.configuration?.firewall?.elements ?? [];

/** What a reconfiguration did to the firewall (the engine's report says it): positions from 1 in the earlier list. */
export interface LiveChange {
  kept: number[];
  /** The new rules, first in the new list. */
  added: readonly unknown[];
  defaultAction: { from: 'ALLOW' | 'DENY'; to: 'ALLOW' | 'DENY' };
}

interface Place {
  chain: LiveChain;
  /** From 1, as `-D CHAIN n` counts. */
  position: number;
}

/** The change script; `what` says which results it goes between. */
export function iptablesLiveChange(
  text: string,
  file: string,
  options: ImportOptions,
  from: Node,
  to: Node,
  change: LiveChange,
  what: string,
): string {
  const imported = importRules('iptables', text, file, options);
  if (imported.report.approximated) {
    const lines = imported.report.lines.filter((l) => l.class === 'approximated').map((l) => l.where);
    throw badRequest(
      `--live ${file}: lines approximated (${lines.slice(0, 3).join(', ')}${lines.length > 3 ? ', ...' : ''}): ` +
        'only exact imports are reconfigured; give --iface/--ipset so that every line is exact',
    );
  }
  const { node: live, origins } = importedNode(imported, to.name);
  checkSame(file, live, from, what);

  const places = new Map<LiveRule, Place>();
  for (const chain of imported.set.chains.values())
    chain.rules.forEach((rule, k) => places.set(rule, { chain, position: k + 1 }));
  const byWhere = new Map([...places.keys()].map((rule) => [rule.where, rule]));
  const kept = new Set(change.kept);
  // Lines with rules of which some are removed; a policy's packets (line 0) are no line to delete.
  const removed = origins.filter((o) => o.line > 0 && o.elements.some((p) => !kept.has(p)));
  const deleted = removed.map((o) => byWhere.get(o.where)!).map((rule) => ({ rule, ...places.get(rule)! }));

  const main = imported.set.path[imported.set.path.length - 1]!;
  const gone = new Set(deleted.map((d) => d.rule));
  // New rules go after the chain's leading lines that match no new connection or have no verdict, and stay.
  let leading = 0;
  for (const rule of main.rules) {
    if ((rule.region.length && rule.verdict.kind !== 'none') || gone.has(rule)) break;
    leading++;
  }
  const chain = forwardChain(to);
  const fresh = change.added.length;
  const inserts = chain.specs.filter((_, k) => chain.elements[k]! < fresh);
  const [policyFrom, policyTo] = [change.defaultAction.from, change.defaultAction.to];
  const policy = policyTo === 'ALLOW' ? 'ACCEPT' : 'DROP';

  const tables = new Map<string, string[]>();
  const add = (table: string, line: string) => tables.set(table, [...(tables.get(table) ?? []), line]);
  const mainTable = main.key.split('/')[0]!;
  if (policyFrom !== policyTo) add(mainTable, `:${main.name} ${policy} [0:0]`);
  for (const d of [...deleted].sort((a, b) => b.position - a.position || a.chain.key.localeCompare(b.chain.key)))
    add(d.chain.key.split('/')[0]!, `-D ${d.chain.name} ${d.position}`);
  inserts.forEach((spec, k) => add(mainTable, `-I ${main.name} ${leading + k + 1} ${spec}`));

  const script = [
    `# nfv: firewall ${to.name}, ${what} against ${file}: ${plural(deleted.length, 'line')} deleted, ` +
      `${plural(inserts.length, 'rule')} inserted at ${main.name} ${leading + 1}, ` +
      `policy ${policyFrom === policyTo ? policy : `${policyFrom === 'ALLOW' ? 'ACCEPT' : 'DROP'} -> ${policy}`}`,
    ...deleted.map((d) => `#   deleted ${d.rule.where}: ${d.rule.text}`),
    '# load with: iptables-restore --noflush < FILE',
    ...[...tables].flatMap(([table, lines]) => [`*${table}`, ...lines, 'COMMIT']),
  ];
  checkApplied(text, file, options, to, {
    deleted: new Set(deleted.map((d) => d.rule.line)),
    main,
    leading,
    inserts,
    policy: policyFrom === policyTo ? undefined : policy,
    partial: removed.filter((o) => o.elements.some((p) => kept.has(p))).map((o) => o.where),
  });
  return `${script.join('\n')}\n`;
}

/** Refuses a live file that is not the firewall the earlier result verified (it drifted, or is another one). */
function checkSame(file: string, live: Node, from: Node, what: string): void {
  const [a, b] = [rulesOf(live).map(elementText), rulesOf(from).map(elementText)];
  const k = a.findIndex((text, i) => text !== b[i]);
  const at = k >= 0 ? k : a.length !== b.length ? Math.min(a.length, b.length) : -1;
  const [defaultLive, defaultFrom] = [live, from].map((n) => n.configuration?.firewall?.defaultAction ?? 'DENY');
  if (at < 0 && defaultLive === defaultFrom) return;
  const said =
    at < 0
      ? `its default is ${defaultLive}, the result's ${defaultFrom}`
      : `its rule ${at + 1} is ${a[at] ?? 'missing'}, the result's ${b[at] ?? 'missing'}`;
  throw badRequest(`--live ${file}: not the firewall ${from.name} of ${what.split(' -> ')[0]} (${said})`);
}

/**
 * The script applied to the live text, in the model: deleted lines left out, the new rules inserted, the policy
 * set. Imported again, it must be equivalent to the reconfigured rules.
 */
function checkApplied(
  text: string,
  file: string,
  options: ImportOptions,
  to: Node,
  c: {
    deleted: Set<number>;
    main: LiveChain;
    leading: number;
    inserts: string[];
    policy: string | undefined;
    partial: string[];
  },
): void {
  const [table, chain] = c.main.key.split('/') as [string, string];
  const out: string[] = [];
  let current: string | undefined;
  let seen = 0;
  let inserted = false;
  const insert = () => {
    if (inserted) return;
    out.push(...c.inserts.map((spec) => `-A ${chain} ${spec}`));
    inserted = true;
  };
  text.split('\n').forEach((raw, k) => {
    const line = raw.replace(/\r$/, '').trim();
    if (line.startsWith('*')) current = line.slice(1).trim();
    if (current === table && line === 'COMMIT') insert();
    if (c.deleted.has(k + 1)) return;
    const appends = current === table && new RegExp(`^(\\[\\d+:\\d+\\]\\s+)?-A ${chain}\\s`).test(line);
    if (appends && seen++ === c.leading) insert();
    if (current === table && c.policy && line.startsWith(`:${chain} `)) out.push(`:${chain} ${c.policy} [0:0]`);
    else out.push(raw);
  });
  const after = importedList(importRules('iptables', out.join('\n'), file, options));
  const d = diff(after, listOfNode(to, `${to.name}, reconfigured`));
  if (d.equivalent) return;
  const why = c.partial.length
    ? `the reconfiguration keeps some of the rules of ${c.partial.slice(0, 3).join(', ')} and removes others, ` +
      'and nfv deletes or keeps whole lines'
    : `the live file changed this way would decide ${d.classes.length} packet classes otherwise`;
  throw badRequest(`--live ${file}: the change cannot be written against the live lines: ${why}`);
}
