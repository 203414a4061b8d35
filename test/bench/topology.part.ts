/**
 * The scale bench's generator: documents nfv reads back unchanged (so any instance of `npm run bench:scale` can be
 * solved again with `nfv simulate`), the same bytes from the same seed.
 */
import t from 'tap';
import { generateTopology } from '../../src/bench/topology.js';
import { decodeDocument, encodeDocument } from '../../src/model/codec.js';
import { NfvType } from '../../src/model/resources.js';

/** The document as XML carries it: an empty list is no element, and reads back absent. */
const withoutEmptyLists = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value, (_, v: unknown) => (Array.isArray(v) && v.length === 0 ? undefined : v)));

t.test('valid NFV documents, in JSON and XML, the same from the same seed', async (t) => {
  for (const nat of [false, true]) {
    for (const seed of [1, 2, 3]) {
      const nfv = generateTopology({ nodes: 150, requirements: 100, nat, seed });
      const name = `150 nodes, nat ${nat}, seed ${seed}`;
      const balancers = nfv.graphs.graph![0]!.node.filter((n) => n.functionalType === 'LOADBALANCER');
      t.ok(balancers.length > 0, `${name}: has load balancers`);
      for (const format of ['json', 'xml'] as const) {
        const text = encodeDocument(NfvType, nfv, format);
        const expected = format === 'xml' ? withoutEmptyLists(nfv) : nfv;
        t.same(decodeDocument(NfvType, text), expected, `${name}: ${format} read back unchanged`);
      }
      t.equal(
        JSON.stringify(generateTopology({ nodes: 150, requirements: 100, nat, seed })),
        JSON.stringify(nfv),
        `${name}: the same bytes again`,
      );
    }
  }
});
