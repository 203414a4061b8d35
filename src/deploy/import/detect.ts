/**
 * Which live firewall format a text is, from its first lines, for rule sources recognised by content. Apart from
 * the importer so that recognising a file does not load it.
 */

/** iptables-save output: comments, then a `*table` line. */
export const looksLikeIptables = (text: string) =>
  /^\s*(?:#[^\n]*\n\s*)*\*(?:filter|nat|mangle|raw|security)\s*$/m.test(text.slice(0, 4096));

/** `nft -j list ruleset` output. */
export const looksLikeNftJson = (text: string) => /^\s*\{\s*"nftables"\s*:/.test(text.slice(0, 200));
