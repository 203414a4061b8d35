/**
 * Corridors from one block-cut tree per network (corridors) are those of the search per requirement (corridorOf),
 * and their nodes are exactly the nodes on some simple path between the ends, found here by listing the paths.
 */
import t from 'tap';
import { generateWan } from '../../../src/bench/wan.js';
import { buildNetwork, corridorOf, corridors, type NetNode } from '../../../src/engine/flows/network.js';
import type { NFV } from '../../../src/model/types.js';
import { smallNetwork } from '../random-network.js';

const networkOf = (nfv: NFV) => buildNetwork(nfv.graphs.graph![0]!, nfv.constraints, false);

/** Nodes on some simple undirected path from src to dst through no end host but the ends, by listing the paths. */
function onSimplePaths(net: NetNode[], src: number, dst: number): number[] {
  const near = net.map(() => new Set<number>());
  for (const n of net)
    for (const m of n.next)
      if (m !== n.index) {
        near[n.index]!.add(m);
        near[m]!.add(n.index);
      }
  const through = (k: number) => k === dst || net[k]!.role !== 'endhost';
  const found = new Set<number>();
  const path = [src];
  const walk = (at: number) => {
    if (at === dst) return path.forEach((k) => found.add(k));
    for (const m of near[at]!)
      if (through(m) && !path.includes(m)) {
        path.push(m);
        walk(m);
        path.pop();
      }
  };
  walk(src);
  return [...found].sort((a, b) => a - b);
}

t.test('corridors: the same as corridorOf, and the nodes of the simple paths', async (t) => {
  let pairs = 0;
  for (let seed = 1; seed <= 30; seed++) {
    const net = networkOf(smallNetwork(seed));
    const between = corridors(net);
    const wrong: string[] = [];
    for (let src = 0; src < net.length; src++)
      for (let dst = 0; dst < net.length; dst++) {
        if (src === dst) continue;
        const corridor = between(src, dst);
        const nodes = corridor ? [...new Set(corridor.blocks.flat())].sort((a, b) => a - b) : [];
        const pathNodes = corridor ? onSimplePaths(net, src, dst) : [];
        if (JSON.stringify(corridor) !== JSON.stringify(corridorOf(net, src, dst)) || `${nodes}` !== `${pathNodes}`)
          wrong.push(`${net[src]!.name} to ${net[dst]!.name}`);
        pairs++;
      }
    t.same(wrong, [], `seed ${seed}`);
  }
  t.ok(pairs > 1000, `${pairs} pairs`);
});

t.test('corridors on generated WANs: the same as corridorOf', async (t) => {
  for (const shape of [
    { kind: 'wan', pops: 24 },
    { kind: 'ring', pops: 12 },
    { kind: 'ladder', pops: 20 },
    { kind: 'mesh', rows: 3, columns: 4 },
  ] as const)
    for (const nat of [false, true]) {
      const net = networkOf(generateWan({ shape, nat, seed: 5 }));
      const between = corridors(net);
      let differ = 0;
      for (let src = 0; src < net.length; src++)
        for (let dst = 0; dst < net.length; dst++)
          if (JSON.stringify(between(src, dst)) !== JSON.stringify(corridorOf(net, src, dst))) differ++;
      t.equal(differ, 0, `${shape.kind} ${nat ? 'NAT' : 'plain'}`);
    }
});
