/**
 * Conntrack's original tuple read for the first packet of a connection (issue 47, item 5): `--ctproto`,
 * `--ctorigsrc`, `--ctorigdst`, `--ctorigsrcport`, `--ctorigdstport` and `--ctdir` are exact, the packet's own fields
 * (without DNAT before filtering, or --ignore-nat on a file that has none). Checked against this test's own reading of the same lines over sample packets.
 */
import t from 'tap';
import { allowsOf } from '../../../src/deploy/analysis/index.js';
import { importRules, importedList } from '../../../src/deploy/import/index.js';
import { ruleBox } from '../../../src/model/space.js';

const FILE = [
  '*filter',
  ':FORWARD DROP [0:0]',
  '-A FORWARD -m conntrack --ctdir REPLY -j ACCEPT',
  '-A FORWARD -m conntrack --ctstate NEW --ctproto tcp --ctorigdst 10.1.0.0/16 --ctorigdstport 22 -j ACCEPT',
  '-A FORWARD -p udp -m conntrack ! --ctorigsrc 192.168.0.0/16 --ctorigsrcport 1000:2000 -j ACCEPT',
  '-A FORWARD -m conntrack --ctdir ORIGINAL --ctproto udp --ctorigdstport 53 -j ACCEPT',
  'COMMIT',
  '',
].join('\n');

const inNet = (addr: string, net: string, bits: number) =>
  addr
    .split('.')
    .slice(0, bits / 8)
    .join('.') ===
  net
    .split('.')
    .slice(0, bits / 8)
    .join('.');

/** The lines read by hand for a first packet: ORIGINAL direction, its own tuple. */
function allowed(p: { src: string; dst: string; proto: string; sport: number; dport: number }): boolean {
  if (p.proto === 'tcp' && inNet(p.dst, '10.1.0.0', 16) && p.dport === 22) return true;
  if (p.proto === 'udp' && !inNet(p.src, '192.168.0.0', 16) && p.sport >= 1000 && p.sport <= 2000) return true;
  return p.proto === 'udp' && p.dport === 53;
}

t.test('the original tuple is the first packet own: exact, and decided as read by hand', async (t) => {
  const imported = importRules('iptables', FILE, 'ct.rules', {});
  t.equal(imported.report.counts.approximated, 0, 'no line approximated');
  const list = importedList(imported, 'may');
  let n = 0;
  for (const src of ['192.168.1.1', '10.1.2.3', '8.8.8.8'])
    for (const dst of ['10.1.9.9', '10.2.0.1'])
      for (const proto of ['tcp', 'udp'])
        for (const sport of [999, 1500, 40000])
          for (const dport of [22, 53, 80]) {
            const box = ruleBox({
              source: src,
              destination: dst,
              protocol: proto.toUpperCase(),
              srcPort: String(sport),
              dstPort: String(dport),
            });
            const p = { src, dst, proto, sport, dport };
            t.equal(allowsOf(list, box).classes.length > 0, allowed(p), `${JSON.stringify(p)}`);
            n++;
          }
  t.equal(n, 108);
  const approximated = (text: string) =>
    importRules('iptables', text, 'ct.rules', { ignoreNat: true })
      .report.lines.filter((l) => l.class === 'approximated')
      .map((l) => l.line);
  const DNAT = '*nat\n-A PREROUTING -p tcp --dport 2222 -j DNAT --to-destination 10.1.0.5:22\nCOMMIT\n';
  t.same(approximated(FILE + DNAT), [4, 6], 'with --ignore-nat the original destination may be before a DNAT');
  t.same(approximated(FILE), [], 'with --ignore-nat and no DNAT in the file, nothing was ignored: exact');
});
