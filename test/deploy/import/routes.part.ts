/**
 * `--routes FILE` (issue 47, item 5): the interfaces of a routing table as nfv reads them, checked against the
 * kernel's own choice. Seeded random tables (overlapping prefixes, metrics, unreachable and blackhole routes, a
 * default, addresses on the interfaces) are installed in a network namespace of their own on veth interfaces; the
 * kernel prints them (`ip route show`, `ip addr`), nfv reads that text, and for every address at and around each
 * prefix's edges, `ip route get` says which interface a packet to it leaves by: nfv's map must put the address under
 * that interface and no other (none when the kernel has no route or delivers it locally). `--iface` lists that
 * overlap are read the same way: each address under the name of its longest prefix only.
 */
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { interfaceMap } from '../../../src/deploy/import/index.js';
import { routeMap } from '../../../src/deploy/import/routes.js';
import { NfvError } from '../../../src/model/errors.js';
import { seeded } from '../../helpers.js';
import { NAMESPACES, veth } from '../nft-harness.js';

const why = veth.status !== 0 ? `veth pairs in a network namespace: ${veth.stderr.trim()}` : '';

const text = (n: number) => [24, 16, 8, 0].map((s) => (n >>> s) & 0xff).join('.');
const num = (a: string) => a.split('.').reduce((v, o) => v * 256 + Number(o), 0);
/** Whether an address lies in a CIDR, by arithmetic of this test's own. */
function within(cidr: string, addr: number): boolean {
  const [a, p] = cidr.split('/');
  const size = 2 ** (32 - Number(p ?? 32));
  const lo = num(a!) - (num(a!) % size);
  return addr >= lo && addr < lo + size;
}

const DEVS = ['e0', 'e1', 'e2', 'f0'];

/** The `ip -batch` commands that build one random table (links and addresses, then routes), and the addresses to ask. */
function scenario(seed: number) {
  const { rnd, int, pick } = seeded(seed);
  const links = DEVS.slice(0, 3).flatMap((d, k) => [`link add ${d} type veth peer name p${k}`, `link set ${d} up`]);
  links.push('link add f0 type veth peer name q0', 'link set f0 up', ...[0, 1, 2].map((k) => `link set p${k} up`));
  links.push('link set q0 up');
  const routes: string[] = [];
  const bases = [num('10.0.0.0'), num('10.20.0.0'), num('192.168.0.0'), num('172.16.0.0')];
  const prefixes: [number, number][] = [];
  const seen = new Set<string>();
  const local: number[] = [];
  for (let k = 0; k < 3; k++) {
    const length = pick([16, 24, 28]);
    const at = pick(bases) + int(2 ** 16);
    links.push(`addr add ${text(at)}/${length} dev ${pick(DEVS)}`);
    local.push(at);
    const size = 2 ** (32 - length);
    prefixes.push([at - (at % size), size]);
  }
  if (rnd() < 0.7) routes.push(`route add default dev ${pick(DEVS)}`);
  for (let k = 0; k < 14; k++) {
    const length = pick([8, 12, 16, 20, 24, 26, 30, 32]);
    const size = 2 ** (32 - length);
    const start = pick(bases) + int(2 ** 20);
    const lo = start - (start % size);
    const metric = pick([0, 0, 5]);
    if (seen.has(`${lo}/${length} ${metric}`)) continue;
    seen.add(`${lo}/${length} ${metric}`);
    prefixes.push([lo, size]);
    const kind = rnd();
    const route = `${text(lo)}/${length}${metric ? ` metric ${metric}` : ''}`;
    if (kind < 0.12) routes.push(`route add unreachable ${route}`);
    else if (kind < 0.2) routes.push(`route add blackhole ${route}`);
    else routes.push(`route add ${route} dev ${pick(DEVS)}`);
  }
  const asked = new Set<number>();
  for (const [lo, size] of prefixes)
    for (const a of [lo - 1, lo, lo + 1, lo + Math.floor(size / 2), lo + size - 1, lo + size])
      if (a >= 0 && a < 2 ** 32 && !local.includes(a)) asked.add(a);
  for (let k = 0; k < 20; k++) asked.add(int(2 ** 32));
  return { links, routes, asked: [...asked].sort((a, b) => a - b) };
}

/**
 * `ip -batch` of `commands` in the namespace's shell (`rest`: what follows on its line): one ip process where one per
 * command cost most of the file.
 */
const batch = (flags: string, commands: string[], rest = '') =>
  `ip ${flags} -batch - <<'EOF'${rest}\n${commands.join('\n')}\nEOF\n`;

/**
 * The kernel's answer per address: the interface a packet to it leaves by, or '' (no route, or delivered here). A
 * route the kernel refuses (the same as a connected one) is left out (`-force`: the batch goes on): nfv reads what
 * the kernel then lists. `ip -force -batch` of `route get` answers each address on a line of stdout, or names the
 * command's line on stderr (`Command failed -:N`) when the kernel has no route.
 */
function kernel(links: string[], routes: string[], asked: number[], show: string) {
  const script =
    batch('', links) +
    (routes.length ? batch('-force', routes, ' 2>/dev/null || true') : '') +
    `${show}\necho '#END'\n` +
    batch(
      '-o -force',
      asked.map((a) => `route get ${text(a)}`),
      ' || true',
    );
  const r = spawnSync('unshare', [...NAMESPACES, 'sh', '-ec', script], { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`namespace: ${r.stderr || String(r.error)}`);
  const [listing, answers] = r.stdout.split('#END\n') as [string, string];
  const failed = r.stderr.split('\n').filter((l) => /^Command failed -:\d+$/.test(l)).length;
  const chosen = new Map<number, string>();
  for (const line of answers.split('\n').filter(Boolean)) {
    // "ADDR dev ..." or "TYPE ADDR dev ..." (local, broadcast, multicast)
    const words = line.split(' ');
    const addr = num(/^\d+\.\d+\.\d+\.\d+$/.test(words[0]!) ? words[0]! : words[1]!);
    const dev = /\bdev (\S+)/.exec(line);
    const isLocal = /^local\b/.test(line);
    if (!asked.includes(addr) || chosen.has(addr)) throw new Error(`ip route get answered ${line}`);
    chosen.set(addr, dev && !isLocal && dev[1] !== 'lo' ? dev[1]! : '');
  }
  if (chosen.size + failed !== asked.length)
    throw new Error(`ip route get: ${chosen.size} answers and ${failed} failures for ${asked.length} addresses`);
  for (const a of asked) if (!chosen.has(a)) chosen.set(a, '');
  return { listing, chosen };
}

t.test(
  'nfv reads ip route show as the kernel routes: each address under the interface it leaves by',
  { skip: why },
  async (t) => {
    let checked = 0;
    for (let seed = 1; seed <= 4; seed++) {
      const { links, routes, asked } = scenario(seed);
      const { listing, chosen } = kernel(links, routes, asked, 'ip route show');
      const map = routeMap(listing, 'routes');
      for (const a of asked) {
        const devs = [...map].filter(([, cidrs]) => cidrs.some((c) => within(c, a))).map(([d]) => d);
        const want = chosen.get(a)!;
        t.same(devs, want ? [want] : [], `seed ${seed}: ${text(a)} (kernel: ${want || 'no interface'})`);
        checked++;
      }
    }
    t.ok(checked > 150, `${checked} addresses checked`);
  },
);

t.test('nfv reads ip addr as the kernel routes: each interface its connected prefixes', { skip: why }, async (t) => {
  for (let seed = 21; seed <= 22; seed++) {
    const { links, asked } = scenario(seed);
    // Only the addresses: no route of the script's own.
    const { listing, chosen } = kernel(links, [], asked, 'ip addr');
    const map = routeMap(listing, 'routes');
    for (const a of asked) {
      const devs = [...map].filter(([, cidrs]) => cidrs.some((c) => within(c, a))).map(([d]) => d);
      const want = chosen.get(a)!;
      t.same(devs, want ? [want] : [], `seed ${seed}: ${text(a)}`);
    }
  }
});

t.test('a line that is no route is refused, naming the file and line', async (t) => {
  const bad = (body: string, re: RegExp) => {
    let said = '';
    try {
      routeMap(body, 'r.txt');
    } catch (e) {
      said = e instanceof NfvError ? e.message : `not an NfvError: ${String(e)}`;
    }
    t.match(said, re, body.split('\n')[0]!);
  };
  bad('default via 10.0.0.1\n', /^r\.txt:1: a route without dev NAME/);
  bad('10.0.0.0/33 dev e0\n', /^r\.txt:1: 10\.0\.0\.0\/33 is not an IPv4 prefix/);
  bad(
    '10.0.0.0/8 dev e0\ndefault proto static\n\tnexthop via 1.1.1.1 dev e0 weight 1 nexthop via 1.1.1.2 dev e1\n',
    /r\.txt:/,
  );
  bad('    inet 10.0.0.1/24 scope global e0\n', /^r\.txt:1: an inet line before its interface/);
  t.same([...routeMap('10.0.0.0/8 dev e0 table 7\nfe80::/64 dev e0\n', 'r')], [], 'other tables and IPv6 skipped');
});

/** Prefixes nested in one another and beside each other, for --iface lists that overlap. */
const NESTED = [
  '0.0.0.0/0',
  '10.0.0.0/8',
  '10.1.0.0/16',
  '10.1.2.0/24',
  '10.1.2.128/25',
  '10.1.2.77/32',
  '10.128.0.0/9',
  '172.16.0.0/12',
  '172.16.5.0/24',
  '192.168.0.0/16',
  '192.168.1.0/24',
  '192.168.1.0/25',
];

t.test('--iface lists that overlap: each address under the name of its longest prefix only', async (t) => {
  let checked = 0;
  for (let seed = 1; seed <= 40; seed++) {
    const { int, pick } = seeded(seed);
    // Each prefix under one name at most (the same prefix under two is refused, below).
    const lists = new Map<string, string[]>();
    for (const p of NESTED) {
      if (int(3) === 0) continue;
      const name = pick(['e0', 'e1', 'e2', 'e3']);
      lists.set(name, [...(lists.get(name) ?? []), p]);
    }
    const given = [...lists].map(([n, ps]) => `${n}=${ps.join(',')}`);
    const map = interfaceMap(given);
    // The test's own lookup: the given prefix with the most bits that holds the address names its interface.
    const expected = (a: number) => {
      let best: [string, number] | undefined;
      for (const [n, ps] of lists)
        for (const p of ps) {
          const bits = Number(p.split('/')[1]);
          if (within(p, a) && (!best || bits > best[1])) best = [n, bits];
        }
      return best ? [best[0]] : [];
    };
    const edges = NESTED.flatMap((p) => {
      const lo = num(p.split('/')[0]!);
      const hi = lo + 2 ** (32 - Number(p.split('/')[1])) - 1;
      return [lo - 1, lo, lo + 1, hi - 1, hi, hi + 1].filter((a) => a >= 0 && a < 2 ** 32);
    });
    for (const a of [...edges, ...Array.from({ length: 20 }, () => int(2 ** 32))]) {
      const names = [...map].filter(([, cidrs]) => cidrs.some((c) => within(c, a))).map(([d]) => d);
      t.same(names, expected(a), `seed ${seed} (${given.join(' ')}): ${text(a)}`);
      checked++;
    }
  }
  t.ok(checked > 2000, `${checked} addresses checked`);
});

t.test('--iface lists that do not overlap are kept as given; the same prefix under two names is refused', async (t) => {
  const given = ['wan=0.0.0.0/1,128.0.0.0/2,193.0.0.0/8', 'lan1=192.168.10.1', 'lan2=192.168.20.0/24,192.169.0.0/16'];
  t.same(
    [...interfaceMap(given)],
    [
      ['wan', ['0.0.0.0/1', '128.0.0.0/2', '193.0.0.0/8']],
      ['lan1', ['192.168.10.1']],
      ['lan2', ['192.168.20.0/24', '192.169.0.0/16']],
    ],
  );
  t.same(
    [...interfaceMap(['a=10.0.0.0/8,10.1.0.0/16', 'b=11.0.0.0/8'])].flat(2),
    ['a', '10.0.0.0/8', '10.1.0.0/16', 'b', '11.0.0.0/8'],
    'a name overlapping only itself: as given',
  );
  t.same(
    [...interfaceMap(['eth1=0.0.0.0/0', 'eth0=192.168.0.0/24', 'eth2=192.168.0.0/16'])].map(([n, l]) => [n, l.length]),
    [
      ['eth1', 16],
      ['eth0', 1],
      ['eth2', 8],
    ],
    'overlapping: the prefixes left to each',
  );
  const said = (values: string[]) => {
    try {
      interfaceMap(values);
      return 'accepted';
    } catch (e) {
      return e instanceof NfvError ? `${e.status} ${e.message}` : `not an NfvError: ${String(e)}`;
    }
  };
  t.match(
    said(['a=10.0.0.0/8', 'b=192.168.0.0/16,10.0.0.9/8']),
    /^400 --iface a and --iface b both name 10\.0\.0\.0\/8: /,
    'both names and the flag',
  );
  t.equal(said(['a=10.0.0.0/8', 'a=10.0.0.0/8']), 'accepted', 'one name twice: the same interface');
  t.match(said(['a=10.0.0.300/8']), /^400 --iface a=10\.0\.0\.300\/8: 10\.0\.0\.300\/8 is not an IPv4 prefix$/);
});

t.test(
  '--iface over --routes: a name replaces its routes, and the lists take their prefixes by longest match',
  async (t) => {
    const table = ['default via 203.0.113.1 dev eth1', '10.8.0.0/24 dev tun0', '192.168.0.0/16 dev eth2'].join('\n');
    const base = { text: table, file: 'routes' };
    t.same([...interfaceMap([], base)], [...routeMap(table, 'routes')], 'no --iface: the routes as they are');
    const cases: [string[], [string, string][]][] = [
      // [--iface values, [address, the interface the test expects (none: '')]]
      [
        ['eth0=192.168.7.0/24'],
        [
          ['192.168.7.5', 'eth0'],
          ['192.168.8.1', 'eth2'],
          ['8.8.8.8', 'eth1'],
          ['10.8.0.1', 'tun0'],
        ],
      ],
      [
        ['eth0=10.0.0.0/8'],
        [
          ['10.1.2.3', 'eth0'],
          ['10.8.0.1', 'tun0'],
          ['11.0.0.1', 'eth1'],
        ],
      ],
      [
        ['vpn=10.8.0.0/24'],
        [
          ['10.8.0.1', 'vpn'],
          ['10.8.1.1', 'eth1'],
        ],
      ],
      [
        ['eth2=172.16.0.0/12'],
        [
          ['192.168.1.1', 'eth1'],
          ['172.16.0.1', 'eth2'],
        ],
      ],
    ];
    for (const [values, expected] of cases) {
      const map = interfaceMap(values, base);
      for (const [a, want] of expected) {
        const names = [...map].filter(([, cidrs]) => cidrs.some((c) => within(c, num(a)))).map(([d]) => d);
        t.same(names, want ? [want] : [], `${values.join(' ')}: ${a}`);
      }
    }
    t.notOk(interfaceMap(['vpn=10.8.0.0/24'], base).has('tun0'), 'tun0 gave its only route to vpn');
    t.same(interfaceMap(['eth0=192.168.7.0/24'], base).get('tun0'), ['10.8.0.0/24'], 'tun0 untouched: as listed');
  },
);
