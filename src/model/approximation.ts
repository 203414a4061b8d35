/**
 * An approximated firewall (firewall-io.md B.5): an import whose live lines nfv cannot all model carries two rule
 * lists in one, the *may* list (allows at least what the firewall allows) and the *must* list (at most). A rule
 * with `approximation="may"` belongs to the may list only, `"must"` to the must list only, any other to both.
 */
import type { Elements, NFV, Node } from './types.js';

export type Approximation = 'may' | 'must';

/** The approximated rules of a node (those of one list only). */
export const approximatedRules = (node: Node): Elements[] =>
  (node.configuration?.firewall?.elements ?? []).filter((e) => e.approximation !== undefined);

/** One list of a node's rules: the rules of the other list left out, the attribute dropped. */
export function listRules(elements: readonly Elements[], which: Approximation): Elements[] {
  return elements
    .filter((e) => e.approximation === undefined || e.approximation === which)
    .map(({ approximation: _a, ...e }) => e);
}

/** The firewall nodes of a document that carry two lists. */
export const approximatedNodes = (nfv: NFV): Node[] =>
  (nfv.graphs.graph ?? []).flatMap((g) => g.node).filter((n) => approximatedRules(n).length > 0);

/** The document with every approximated firewall reduced to one of its lists. */
export function withList(nfv: NFV, which: Approximation): NFV {
  const out = structuredClone(nfv);
  for (const n of approximatedNodes(out)) {
    const fw = n.configuration!.firewall!;
    fw.elements = listRules(fw.elements ?? [], which);
  }
  return out;
}

/** The lines behind a node's approximated rules, for messages: their origins, or `node#id`. */
export function approximatedLines(nodes: readonly Node[], rules?: (node: Node, e: Elements) => boolean): string[] {
  const out = new Set<string>();
  for (const n of nodes)
    for (const e of approximatedRules(n))
      if (!rules || rules(n, e)) out.add(e.origin ?? `${n.name} rule ${e.id ?? '?'}`);
  return [...out];
}
