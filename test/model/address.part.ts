/** Rule addresses (octet patterns and CIDR prefixes), their refusals, and ports that need TCP or UDP. */
import t from 'tap';
import { random } from '../../src/bench/topology.js';
import {
  addressSetText,
  parseAddress,
  portsProblem,
  rangeBlocks,
  ruleAddressBounds,
  ruleAddressProblem,
  ruleAddressText,
} from '../../src/model/address.js';
import { decodeDocument, encodeDocument } from '../../src/model/codec.js';
import { NfvError } from '../../src/model/errors.js';
import { ElementsType, PropertyType } from '../../src/model/resources.js';

/** Every address of a /P prefix, counted the slow way: addresses whose first P bits equal the network's. */
function inPrefix(network: number, length: number, address: number): boolean {
  const shift = 32 - length;
  return length === 0 || Math.floor(address / 2 ** shift) === Math.floor(network / 2 ** shift);
}
const valueOf = (octets: number[]) => octets.reduce((v, o) => v * 256 + o, 0);

t.test('a prefix of any length is one box: leading octets fixed, the cut octet an aligned block', async (t) => {
  t.same(ruleAddressBounds('172.16.0.0/12'), [172, 172, 16, 31, 0, 255, 0, 255]);
  t.same(ruleAddressBounds('10.1.2.128/25'), [10, 10, 1, 1, 2, 2, 128, 255]);
  t.same(ruleAddressBounds('192.168.1.48/28'), [192, 192, 168, 168, 1, 1, 48, 63]);
  t.same(ruleAddressBounds('10.0.0.4/31'), [10, 10, 0, 0, 0, 0, 4, 5]);
  t.same(ruleAddressBounds('0.0.0.0/0'), [0, 255, 0, 255, 0, 255, 0, 255]);
  t.same(ruleAddressBounds('1.2.3.4/32'), [1, 1, 2, 2, 3, 3, 4, 4]);
  t.same(ruleAddressBounds('10.-1.0.1'), [10, 10, 0, 255, 0, 0, 1, 1], 'octet patterns as before');
  t.same(ruleAddressBounds('*'), [0, 255, 0, 255, 0, 255, 0, 255]);
  // Against the definition, on sampled addresses for every length.
  const rnd = random(12);
  let checked = 0;
  for (let length = 0; length <= 32; length++) {
    const network = [203, 0, 113, 0].map((o, k) => (8 * (k + 1) <= length ? o : 0));
    const bits = valueOf(network) - (valueOf(network) % 2 ** (32 - length));
    const text = `${[3, 2, 1, 0].map((k) => Math.floor(bits / 256 ** k) % 256).join('.')}/${length}`;
    const b = ruleAddressBounds(text)!;
    t.ok(b, `${text} is a rule address`);
    for (let i = 0; i < 400; i++) {
      const address = [0, 1, 2, 3].map((k) =>
        i % 2 ? Math.floor(rnd() * 256) : b[2 * k]! + Math.floor(rnd() * (b[2 * k + 1]! - b[2 * k]! + 1)),
      );
      const inBox = address.every((o, k) => o >= b[2 * k]! && o <= b[2 * k + 1]!);
      if (inBox !== inPrefix(bits, length, valueOf(address))) t.fail(`${text}: ${address.join('.')}`);
      checked++;
    }
  }
  t.equal(checked, 33 * 400, 'the box holds exactly the prefix, every length 0 to 32');
});

t.test('refusals say why; node names and requirements stay octet patterns', async (t) => {
  t.match(ruleAddressProblem('10.0.0.1/8')!, /bits set after its \/8 prefix \(the network is 10\.0\.0\.0\/8\)/);
  t.match(ruleAddressProblem('172.17.0.0/12')!, /the network is 172\.16\.0\.0\/12/);
  for (const bad of ['10.0.0.0/33', '10.0.0/8', '256.0.0.0/8', '10.0.0.0/', '10.0.0.0/-1', 'a/8', '10.0.0.0/8/8'])
    t.match(ruleAddressProblem(bad)!, /is not an IPv4 address pattern .* or prefix \(A\.B\.C\.D\/P, P 0-32\)/, bad);
  t.equal(ruleAddressProblem('10.0.0.0/8'), undefined);
  t.equal(parseAddress('10.0.0.0/8'), undefined, 'a prefix is no node name');
});

t.test('documents: an element takes a prefix and keeps its form; bad ones are 400s naming the field', async (t) => {
  const xml =
    '<elements><action>ALLOW</action><source>172.16.0.0/12</source><destination>10.0.-1.-1</destination>' +
    '</elements>';
  const element = decodeDocument(ElementsType, xml);
  t.equal(element.source, '172.16.0.0/12');
  t.equal(encodeDocument(ElementsType, element, 'xml').includes('<source>172.16.0.0/12</source>'), true);
  t.equal(decodeDocument(ElementsType, encodeDocument(ElementsType, element, 'json')).source, '172.16.0.0/12');
  const refused = (type: typeof ElementsType | typeof PropertyType, text: string) => {
    try {
      decodeDocument(type, text);
    } catch (e) {
      t.equal((e as NfvError).status, 400);
      return (e as Error).message;
    }
    return 'accepted';
  };
  t.match(
    refused(ElementsType, '{"source": "10.0.0.1/8", "destination": "*"}'),
    /source: "10\.0\.0\.1\/8" has bits set after its \/8 prefix/,
  );
  t.match(
    refused(ElementsType, '{"source": "*", "destination": "10.0.0.0/40"}'),
    /destination: "10\.0\.0\.0\/40" is not an IPv4 address pattern/,
  );
  t.match(
    refused(ElementsType, '{"source": "*", "destination": "*", "protocol": "OTHER", "dstPort": "80"}'),
    /dst_port: "80": OTHER traffic has no ports: ports apply to TCP and UDP only/,
  );
  t.match(
    refused(
      PropertyType,
      '{"name": "ISOLATION_PROPERTY", "graph": 0, "src": "1.1.1.1", "dst": "2.2.2.2", ' +
        '"lv4Proto": "OTHER", "srcPort": "1000-2000"}',
    ),
    /src_port: "1000-2000": OTHER traffic has no ports/,
  );
  t.match(
    refused(
      PropertyType,
      '{"name": "ISOLATION_PROPERTY", "graph": 0, "src": "1.1.1.1", "dst": "2.2.2.2", ' +
        '"lv4Proto": "OTHER", "dstPort": "0-65535"}',
    ),
    /accepted/,
    'a full range is no port condition',
  );
});

t.test('ports need TCP or UDP; tables show prefixes as CIDR', async (t) => {
  t.equal(portsProblem('OTHER', '*', 'null'), undefined);
  t.equal(portsProblem('ANY', '80'), undefined);
  t.equal(portsProblem(undefined, '80'), undefined);
  t.match(portsProblem('OTHER', '*', '80')!, /no ports/);
  t.equal(ruleAddressText('198.-1.-1.-1'), '198.0.0.0/8');
  t.equal(ruleAddressText('10.0.0.-1'), '10.0.0.0/24');
  t.equal(ruleAddressText('-1.-1.-1.-1'), '*');
  t.equal(ruleAddressText('1.2.3.4'), '1.2.3.4');
  t.equal(ruleAddressText('1.2.3.4/32'), '1.2.3.4');
  t.equal(ruleAddressText('172.16.0.0/12'), '172.16.0.0/12');
  t.equal(ruleAddressText('10.-1.0.1'), '10.*.0.1', 'not a prefix: octet by octet');
  t.equal(addressSetText([10, 10, 0, 0, 0, 0, 5, 9]), '10.0.0.5-9');
});

t.test('a range is the fewest aligned blocks that cover it exactly', async (t) => {
  const rnd = random(91);
  const wrong: string[] = [];
  for (let i = 0; i < 300; i++) {
    const bits = i % 2 ? 8 : 32;
    const a = Math.floor(rnd() * 2 ** bits);
    const b = Math.floor(rnd() * 2 ** bits);
    const [lo, hi] = a <= b ? [a, b] : [b, a];
    // Contiguous, aligned and within the range, each as large as it can be (its double would not be aligned or fit).
    let at = lo;
    for (const { start, length } of rangeBlocks(lo, hi, bits)) {
      const size = 2 ** (bits - length);
      const bigger = length > 0 && start % (2 * size) === 0 && start + 2 * size - 1 <= hi;
      if (start !== at || start % size !== 0 || bigger) wrong.push(`${lo}-${hi}: block ${start}/${length}`);
      at = start + size;
    }
    if (at !== hi + 1) wrong.push(`${lo}-${hi}: covered up to ${at - 1}`);
  }
  t.same(wrong, [], '300 random ranges of 8 and 32 bits');
  t.same(rangeBlocks(0, 2 ** 32 - 1), [{ start: 0, length: 0 }], 'everything is /0');
  t.same(rangeBlocks(16, 31, 8), [{ start: 16, length: 4 }], 'an octet interval 16-31 is one /4 block');
});
