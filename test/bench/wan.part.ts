/**
 * The WAN generator of `npm run bench:wan`: documents nfv reads, the same bytes from the same seed, the sizes asked
 * for, every host behind an allocation place, and a 16-PoP WAN solved SAT with its answer re-checked by the
 * independent evaluator.
 */
import t from 'tap';
import { generateWan, type WanShape } from '../../src/bench/wan.js';
import { parseAddress } from '../../src/model/address.js';
import { decodeDocument } from '../../src/model/codec.js';
import { NfvType } from '../../src/model/resources.js';
import type { NFV } from '../../src/model/types.js';
import { checkedSimulate } from '../engine/evaluator.js';

const nodesOf = (nfv: NFV) => nfv.graphs.graph![0]!.node;

/** Routers, links between two routers (through one place each), hosts, NATs, as the document has them. */
function census(nfv: NFV) {
  const nodes = nodesOf(nfv);
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const type = (name: string) => byName.get(name)!.functionalType;
  const places = nodes.filter((n) => n.functionalType === undefined);
  return {
    byName,
    routers: nodes.filter((n) => n.functionalType === 'FORWARDER'),
    links: places.filter((p) => p.neighbour!.length === 2 && p.neighbour!.every((nb) => type(nb.name) === 'FORWARDER')),
    places,
    hosts: nodes.filter((n) => n.functionalType === 'WEBSERVER' || n.functionalType === 'WEBCLIENT'),
    nats: nodes.filter((n) => n.functionalType === 'NAT'),
  };
}

const SHAPES: [WanShape, number][] = [
  [{ kind: 'wan', pops: 16 }, 16],
  [{ kind: 'wan', pops: 60 }, 60],
  [{ kind: 'ring', pops: 24 }, 24],
  [{ kind: 'ladder', pops: 40 }, 40],
  [{ kind: 'mesh', rows: 4, columns: 5 }, 20],
];

t.test('documents nfv reads, the same bytes from the same seed, the sizes asked for', async (t) => {
  for (const [shape, pops] of SHAPES) {
    for (const nat of [false, true]) {
      const label = `${JSON.stringify(shape)} ${nat ? 'nat' : 'plain'}`;
      const nfv = generateWan({ shape, nat, seed: 3 });
      const text = JSON.stringify(nfv);
      t.same(decodeDocument(NfvType, text), nfv, `${label}: read back unchanged`);
      t.equal(JSON.stringify(generateWan({ shape, nat, seed: 3 })), text, 'the same seed gives the same bytes');
      t.not(JSON.stringify(generateWan({ shape, nat, seed: 4 })), text, 'another seed another network');
      const nodes = nodesOf(nfv);
      t.ok(
        nodes.every((n) => parseAddress(n.name)),
        'every name an IPv4 address pattern',
      );
      t.equal(new Set(nodes.map((n) => n.name)).size, nodes.length, 'names are unique');
      const c = census(nfv);
      t.equal(c.routers.length, pops, `${pops} PoPs`);
      const expected =
        shape.kind === 'wan'
          ? Math.round(1.2 * pops)
          : shape.kind === 'ring'
            ? pops
            : shape.kind === 'ladder'
              ? 3 * (pops / 2) - 2
              : shape.rows * (shape.columns - 1) + shape.columns * (shape.rows - 1);
      t.ok(Math.abs(c.links.length - expected) <= Math.max(1, 0.03 * expected), `${c.links.length} links`);
      t.equal(c.hosts.length, pops, 'a host per PoP');
      t.equal(c.nats.length > 0, nat, nat ? 'NATs' : 'no NAT');
      const props = nfv.propertyDefinition.property;
      t.equal(props.length, 2 * pops, 'two requirements per host');
      const ported = props.filter((p) => p.dstPort !== undefined && p.lv4Proto === 'TCP').length;
      t.ok(ported > 0.3 * props.length && ported < 0.7 * props.length, `${ported} of ${props.length} on TCP ports`);
      t.equal(new Set(props.map((p) => `${p.src} ${p.dst}`)).size, props.length, 'one requirement per pair');
    }
  }
});

t.test('every host behind a place, NATs between two places, every router reached', async (t) => {
  for (const nat of [false, true]) {
    const nfv = generateWan({ shape: { kind: 'wan', pops: 100 }, nat, seed: 1 });
    const c = census(nfv);
    const type = (name: string) => c.byName.get(name)!.functionalType;
    for (const host of [...c.hosts, ...c.nats]) {
      const ok = host.neighbour!.every((nb) => type(nb.name) === undefined);
      if (!ok) t.fail(`${host.name} is linked to something other than a place`);
    }
    t.ok(
      c.hosts.every((h) => h.neighbour!.length === 1),
      'each host on one link',
    );
    t.ok(
      c.places.every((p) => p.neighbour!.length === 2),
      'each place on one link',
    );
    // Connected: a walk from the first router meets every node.
    const seen = new Set([c.routers[0]!.name]);
    const queue = [c.routers[0]!.name];
    while (queue.length)
      for (const nb of c.byName.get(queue.pop()!)!.neighbour!) {
        if (seen.has(nb.name)) continue;
        seen.add(nb.name);
        queue.push(nb.name);
      }
    t.equal(seen.size, nodesOf(nfv).length, 'one connected network');
    const publicHosts = new Set(c.hosts.filter((h) => h.functionalType === 'WEBSERVER').map((h) => h.name));
    t.ok(
      nfv.propertyDefinition.property.every((p) => publicHosts.has(p.dst) && p.src !== p.dst),
      'requirements between two hosts, to a public one',
    );
  }
});

t.test('the issue sizes: 750 PoPs, 900 links, 800 requirements; ring of 100 with 200', async (t) => {
  const big = generateWan({ shape: { kind: 'wan', pops: 750, links: 900 }, nat: false, seed: 1, requirements: 800 });
  const c = census(big);
  t.equal(c.routers.length, 750);
  t.ok(Math.abs(c.links.length - 900) <= 27, `${c.links.length} links`);
  t.equal(big.propertyDefinition.property.length, 800);
  t.ok(Math.max(...c.routers.map((r) => r.neighbour!.length)) <= 16, 'low degree, as backbones');
  const ring = census(generateWan({ shape: { kind: 'ring', pops: 100 }, nat: false, seed: 1 }));
  t.equal(ring.links.length, 100);
  t.ok(
    ring.routers.every((r) => r.neighbour!.length === 3),
    'two ring links and a host per PoP',
  );
});

t.test('a 16-PoP WAN is SAT, its answer re-checked by the independent evaluator', async (t) => {
  for (const nat of [false, true]) {
    const nfv = generateWan({ shape: { kind: 'wan', pops: 16 }, nat, seed: 1 });
    const { report } = await checkedSimulate(nfv, {});
    t.equal(report.verdict, 'SAT', nat ? 'nat' : 'plain');
    t.equal(report.satisfied, report.properties);
    t.ok(report.firewalls > 0, 'firewalls allocated for the isolations');
  }
});
