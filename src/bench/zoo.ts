/**
 * Reader of the Internet Topology Zoo (issue 48; CC BY 4.0) for `npm run bench:zoo`: a network's GML or GraphML file
 * as the largest connected part of its graph, PoPs numbered as they first appear in the file, so that the WAN builder
 * of wan.ts (`{ kind: 'graph' }`) puts a router on each PoP and a place on each link as it does for generated graphs.
 *
 * Self-loops are dropped and parallel links kept once (one place per pair of PoPs); the largest part is the one with
 * the most PoPs, the first in file order among equals. The Zoo is read from a folder holding gml/ or graphml/ (a
 * checkout or its unpacked tarballs) or from a bare git directory (read with `git show HEAD:...`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { XMLParser } from 'fast-xml-parser';

export interface ZooGraph {
  pops: number;
  links: [number, number][];
}

/** A graph's nodes (ids in file order) and its links (pairs of ids), before the largest part is taken. */
interface RawGraph {
  nodes: string[];
  edges: [string, string][];
}

/** GML tokens: keys, numbers, quoted strings and brackets. */
function* gmlTokens(text: string): Generator<string> {
  const token = /"([^"]*)"|(\[|\])|([^\s[\]"]+)/g;
  for (let m = token.exec(text); m; m = token.exec(text)) yield m[1] ?? m[2] ?? m[3]!;
}

type GmlValue = string | GmlList;
type GmlList = [string, GmlValue][];

/** Parses GML's `key value` and `key [ ... ]` lists into nested pairs, keeping their order. */
function parseGmlList(tokens: Iterator<string>, top: boolean): GmlList {
  const list: GmlList = [];
  for (let key = tokens.next(); !key.done; key = tokens.next()) {
    if (key.value === ']') {
      if (top) throw new Error('GML: "]" without "["');
      return list;
    }
    const value = tokens.next();
    if (value.done) throw new Error(`GML: no value for ${key.value}`);
    list.push([key.value, value.value === '[' ? parseGmlList(tokens, false) : value.value]);
  }
  if (!top) throw new Error('GML: "[" without "]"');
  return list;
}

function readGml(text: string): RawGraph {
  const top = parseGmlList(gmlTokens(text), true);
  const graph = top.find(([k, v]) => k === 'graph' && typeof v !== 'string')?.[1];
  if (!graph || typeof graph === 'string') throw new Error('GML: no graph');
  const field = (list: GmlValue, key: string) => {
    const v = typeof list === 'string' ? undefined : list.find(([k]) => k === key)?.[1];
    if (typeof v !== 'string') throw new Error(`GML: a ${key} missing`);
    return v;
  };
  return {
    nodes: graph.filter(([k]) => k === 'node').map(([, v]) => field(v, 'id')),
    edges: graph.filter(([k]) => k === 'edge').map(([, v]) => [field(v, 'source'), field(v, 'target')]),
  };
}

function readGraphml(text: string): RawGraph {
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '',
    isArray: (name) => name === 'node' || name === 'edge' || name === 'graph',
  });
  const doc = parser.parse(text) as {
    graphml?: { graph?: { node?: { id: string }[]; edge?: { source: string; target: string }[] }[] };
  };
  const graph = doc.graphml?.graph?.[0];
  if (!graph) throw new Error('GraphML: no graph');
  return {
    nodes: (graph.node ?? []).map((n) => String(n.id)),
    edges: (graph.edge ?? []).map((e) => [String(e.source), String(e.target)]),
  };
}

/** The largest connected part of a graph, PoPs renumbered in file order, links in file order, each pair once. */
function largestPart(raw: RawGraph): ZooGraph {
  const index = new Map<string, number>();
  for (const id of raw.nodes) if (!index.has(id)) index.set(id, index.size);
  const at = (id: string) => {
    const k = index.get(id);
    if (k === undefined) throw new Error(`a link names node ${id}, which the file does not hold`);
    return k;
  };
  const seen = new Set<string>();
  const pairs: [number, number][] = [];
  for (const [s, t] of raw.edges) {
    const [a, b] = [at(s), at(t)];
    const key = `${Math.min(a, b)} ${Math.max(a, b)}`;
    if (a === b || seen.has(key)) continue;
    seen.add(key);
    pairs.push([a, b]);
  }
  const n = index.size;
  const adjacent: number[][] = Array.from({ length: n }, () => []);
  for (const [a, b] of pairs) {
    adjacent[a]!.push(b);
    adjacent[b]!.push(a);
  }
  const part = new Int32Array(n).fill(-1);
  const sizes: number[] = [];
  for (let s = 0; s < n; s++) {
    if (part[s] !== -1) continue;
    const p = sizes.length;
    const stack = [s];
    part[s] = p;
    let size = 0;
    while (stack.length) {
      const k = stack.pop()!;
      size++;
      for (const m of adjacent[k]!) {
        if (part[m] !== -1) continue;
        part[m] = p;
        stack.push(m);
      }
    }
    sizes.push(size);
  }
  if (n === 0) return { pops: 0, links: [] };
  // The first part (in file order) among those of the most PoPs.
  const best = sizes.indexOf(Math.max(...sizes));
  const renumbered = new Int32Array(n).fill(-1);
  let pops = 0;
  for (let k = 0; k < n; k++) if (part[k] === best) renumbered[k] = pops++;
  const links = pairs
    .filter(([a]) => part[a] === best)
    .map(([a, b]): [number, number] => [renumbered[a]!, renumbered[b]!]);
  return { pops, links };
}

/** A Zoo network's graph from the text of its file, `gml` or `graphml`. */
export function readZoo(text: string, format: 'gml' | 'graphml'): ZooGraph {
  return largestPart(format === 'gml' ? readGml(text) : readGraphml(text));
}

/** Where the Zoo is: the NFV_ZOO folder, or the read-only mirror. */
export const ZOO_MIRROR = '/work/.mirror/mroughan+InternetTopologyZoo/repo';

/** A Zoo's networks by name (file name without extension, sorted) and a reader of each, in one format. */
export interface ZooSource {
  where: string;
  names: string[];
  read: (name: string) => ZooGraph;
}

/** Opens the Zoo at `where` (a folder holding `format`/, or a bare git directory); undefined where it is not. */
export function openZoo(where: string, format: 'gml' | 'graphml' = 'gml'): ZooSource | undefined {
  const suffix = `.${format}`;
  const folder = path.join(where, format);
  if (existsSync(folder)) {
    const names = readdirSync(folder)
      .filter((f) => f.endsWith(suffix))
      .map((f) => f.slice(0, -suffix.length))
      .sort();
    return { where, names, read: (name) => readZoo(readFileSync(path.join(folder, name + suffix), 'utf8'), format) };
  }
  if (!existsSync(path.join(where, 'HEAD'))) return undefined;
  const git = (...args: string[]) =>
    execFileSync('git', ['--git-dir', where, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });
  let listing: string;
  try {
    listing = git('ls-tree', '--name-only', 'HEAD', `${format}/`);
  } catch {
    return undefined;
  }
  const names = listing
    .split('\n')
    .filter((f) => f.endsWith(suffix))
    .map((f) => path.basename(f, suffix))
    .sort();
  return { where, names, read: (name) => readZoo(git('show', `HEAD:${format}/${name}${suffix}`), format) };
}
