/**
 * The fabric generator: valid NFV documents of the shapes asked for, the same bytes from the same seed, accepted
 * and solved by the engine on a small fabric (its answer re-checked without listing paths); and, with
 * NFV_FABRIC_RESULTS=DIR, every answer `npm run bench:fabric` stored there re-checked by the path-free evaluator.
 */
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { generateFabric, type FabricShape } from '../../src/bench/fabric.js';
import { simulate } from '../../src/engine/simulate.js';
import { parseAddress } from '../../src/model/address.js';
import { decodeDocument } from '../../src/model/codec.js';
import { NfvType } from '../../src/model/resources.js';
import type { NFV, Node } from '../../src/model/types.js';
import { pathFreeViolations, verdicts } from '../engine/evaluator-pathfree.js';

const nodesOf = (nfv: NFV) => nfv.graphs.graph![0]!.node;
const hostsOf = (nfv: NFV) => nodesOf(nfv).filter((n) => n.functionalType?.startsWith('WEB'));
/** Neighbours of a node seen through the allocation places on its links. */
const beyondPlaces = (nfv: NFV, node: Node) => {
  const byName = new Map(nodesOf(nfv).map((n) => [n.name, n]));
  return (node.neighbour ?? []).flatMap((nb) => {
    const place = byName.get(nb.name)!;
    return place.functionalType ? [] : place.neighbour!.map((x) => x.name).filter((x) => x !== node.name);
  });
};

t.test('documents nfv reads, with IPv4 names, symmetric links and about two requirements per host', async (t) => {
  const shapes: FabricShape[] = [
    { kind: 'leaf-spine', spines: 4, leaves: 8, hostsPerLeaf: 2 },
    { kind: 'fat-tree', k: 4 },
    { kind: 'rings', rings: 4, ringSize: 4 },
    { kind: 'mesh', routers: 40, degree: 3.5 },
  ];
  for (const shape of shapes) {
    for (const nat of [false, true]) {
      const nfv = generateFabric({ shape, nat, seed: 5 });
      const text = JSON.stringify(nfv);
      t.same(decodeDocument(NfvType, text), nfv, `${shape.kind} ${nat}: read back unchanged`);
      t.equal(JSON.stringify(generateFabric({ shape, nat, seed: 5 })), text, 'the same seed gives the same bytes');
      t.not(JSON.stringify(generateFabric({ shape, nat, seed: 6 })), text, 'another seed another network');
      const nodes = nodesOf(nfv);
      t.ok(
        nodes.every((n) => parseAddress(n.name)),
        'every name is an IPv4 address pattern',
      );
      t.equal(new Set(nodes.map((n) => n.name)).size, nodes.length, 'names are unique');
      const links = new Set(nodes.flatMap((n) => n.neighbour!.map((nb) => `${n.name} ${nb.name}`)));
      t.ok(
        [...links].every((l) => links.has(l.split(' ').reverse().join(' '))),
        'every link both ways',
      );
      const hosts = hostsOf(nfv);
      const props = nfv.propertyDefinition.property;
      t.ok(Math.abs(props.length - 2 * hosts.length) <= 2, `${props.length} requirements for ${hosts.length} hosts`);
      t.ok(
        props.every((p) => p.src !== p.dst && hosts.some((h) => h.name === p.dst && h.functionalType === 'WEBSERVER')),
        'between two hosts, to a public one',
      );
      t.equal(
        props.some((p) => p.dstPort !== undefined),
        nat,
        nat ? 'ports on some requirements' : 'no ports',
      );
      t.equal(
        nodes.some((n) => n.functionalType === 'NAT'),
        nat,
        nat ? 'NATs' : 'no NAT',
      );
    }
  }
});

t.test('the shapes: leaf-spine, fat-tree, mesh', async (t) => {
  const spine = generateFabric({
    shape: { kind: 'leaf-spine', spines: 8, leaves: 32, hostsPerLeaf: 8 },
    nat: false,
    seed: 1,
  });
  t.equal(hostsOf(spine).length, 256, '256 hosts');
  t.equal(spine.propertyDefinition.property.length, 512, '512 requirements');
  const switches = nodesOf(spine).filter((n) => n.functionalType === 'FORWARDER');
  const leaves = switches.filter((n) => beyondPlaces(spine, n).some((x) => x.startsWith('100.')));
  t.equal(leaves.length, 32, '32 leaves');
  t.ok(
    leaves.every((l) => beyondPlaces(spine, l).filter((x) => x.startsWith('10.')).length === 8),
    'each leaf linked to the 8 spines through a place',
  );
  const tree = generateFabric({ shape: { kind: 'fat-tree', k: 8 }, nat: false, seed: 1 });
  t.equal(hostsOf(tree).length, 128, 'fat-tree k=8: k^3/4 hosts');
  t.equal(nodesOf(tree).filter((n) => n.functionalType === 'FORWARDER').length, 80, '5k^2/4 switches');
  const mesh = generateFabric({ shape: { kind: 'mesh', routers: 200, degree: 3.5 }, nat: false, seed: 1 });
  const routers = nodesOf(mesh).filter((n) => n.functionalType === 'FORWARDER');
  const degrees = routers.map((r) => beyondPlaces(mesh, r).filter((x) => x.startsWith('10.')).length);
  const mean = degrees.reduce((s, d) => s + d, 0) / degrees.length;
  t.ok(Math.abs(mean - 3.5) < 0.05, `average degree ${mean}`);
  t.ok(Math.min(...degrees) >= 2, 'every router on a cycle (degree 2 at least)');
  t.ok(Math.max(...degrees) >= 8, `a few hubs (largest degree ${Math.max(...degrees)})`);
  t.ok(degrees.filter((d) => d <= 3).length > degrees.length / 2, 'most routers of degree 2 or 3');
});

/** The answer with every firewall's rules replaced by none and the given default action. */
const everyFirewall = (out: NFV, defaultAction: 'ALLOW' | 'DENY'): NFV => {
  const copy = structuredClone(out);
  for (const n of nodesOf(copy))
    if (n.functionalType === 'FIREWALL') n.configuration!.firewall = { defaultAction, elements: [] };
  return copy;
};

t.test('a small fabric solved by both methods, the answers re-checked without listing paths', async (t) => {
  for (const nat of [false, true]) {
    const nfv = generateFabric({ shape: { kind: 'leaf-spine', spines: 2, leaves: 3, hostsPerLeaf: 2 }, nat, seed: 2 });
    const kinds = new Set(nfv.propertyDefinition.property.map((p) => p.name));
    t.ok(kinds.has('ISOLATION_PROPERTY') && kinds.has('REACHABILITY_PROPERTY'), 'isolation and reachability asked');
    for (const paths of ['few', 'all'] as const) {
      const { nfv: out, report } = await simulate(nfv, { timeoutSeconds: 600, paths });
      const what = `${nat ? 'NAT and ports' : 'plain'}, paths: '${paths}'`;
      t.equal(report.verdict, 'SAT', `${what}: ${report.satisfied}/${report.properties}`);
      t.same(pathFreeViolations(out), [], 'every requirement holds');
      t.ok(
        verdicts(out).every((v) => v.method === 'blocks'),
        'no path listed',
      );
      // The check the stored answers go through finds a requirement broken.
      const open = pathFreeViolations(everyFirewall(out, 'ALLOW'));
      t.ok(open.length > 0 && open.every((v) => v.property.name === 'ISOLATION_PROPERTY'), 'firewalls open: isolation');
      const shut = pathFreeViolations(everyFirewall(out, 'DENY'));
      t.ok(
        shut.length > 0 && shut.every((v) => v.property.name !== 'ISOLATION_PROPERTY'),
        'firewalls shut: reachability',
      );
    }
  }
});

/** What `npm run bench:fabric` lists in answers.json beside the answers it stored. */
interface StoredAnswer {
  instance: string;
  method: 'few' | 'all';
  file: string;
}

const stored = process.env.NFV_FABRIC_RESULTS;
t.test(
  'every answer the fabric benchmark stored, of either method, holds',
  { skip: !stored && 'NFV_FABRIC_RESULTS is not set' },
  async (t) => {
    const listed = JSON.parse(await readFile(path.join(stored!, 'answers.json'), 'utf8')) as StoredAnswer[];
    const files = (await readdir(stored!)).filter((f) => f.endsWith('.result.json')).sort();
    t.same(listed.map((a) => a.file).sort(), files, 'the answers listed are the answers stored');
    const of = (method: StoredAnswer['method']) => listed.filter((a) => a.method === method).length;
    t.ok(of('few') > 0, 'answers of the engine as shipped');
    t.comment(`${of('few')} answers of the engine as shipped, ${of('all')} of the path-enumerating method`);
    for (const { file } of listed) {
      const out = JSON.parse(await readFile(path.join(stored!, file), 'utf8')) as NFV;
      const props = out.propertyDefinition.property;
      // A requirement without a verdict would escape the check below, which looks at those said to hold.
      t.ok(
        props.length > 0 && props.every((p) => typeof p.isSat === 'boolean'),
        `${file}: a verdict on every requirement`,
      );
      t.same(pathFreeViolations(out), [], `${file}: every requirement said to hold holds`);
    }
  },
);
