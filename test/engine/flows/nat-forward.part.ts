/**
 * A NAT with a forward table (docs/SEMANTICS.md, "Port forwards"): what comes to its address from outside goes to
 * the first entry's host, with the entry's port, or is delivered to the NAT. The engine's verdicts are the ones
 * worked out by hand here, and every answer claimed satisfied is re-checked by the independent evaluators.
 */
import t from 'tap';
import { simulate } from '../../../src/engine/simulate.js';
import type { NFV, Property } from '../../../src/model/types.js';
import { firewall, isolation, network, place, reachability, webclient, webserver } from '../build.js';
import { violations } from '../evaluator.js';
import { pathFreeViolations } from '../evaluator-pathfree.js';

const N = '198.51.100.1';
const CLIENT = '203.0.113.7';
const WEB = '10.0.0.2';
const SSH = '10.0.0.3';

/** client - NAT N (forwards TCP 80 to WEB:8080, TCP 2222 to SSH:22) - middle - WEB, SSH. */
function router(middle: ReturnType<typeof place>, requirements: Property[], forward = true): NFV {
  return network(
    [
      webclient(CLIENT, N),
      [
        N,
        'NAT',
        [CLIENT, '1.0.0.1'],
        {
          name: 'n',
          nat: {
            source: [WEB, SSH],
            ...(forward
              ? {
                  forward: [
                    { protocol: 'TCP', dstPort: '80', to: WEB, toPort: '8080' },
                    { protocol: 'TCP', dstPort: '2222', to: SSH, toPort: '22' },
                  ],
                }
              : {}),
          },
        },
      ],
      middle,
      webserver(WEB, '1.0.0.1'),
      webserver(SSH, '1.0.0.1'),
    ],
    requirements,
  );
}

const tcp = (dstPort: string) => ({ lv4Proto: 'TCP' as const, dstPort });
/** The filter: WEB on 8080 and SSH on 22 only. */
const filter = firewall(
  '1.0.0.1',
  'DENY',
  [
    { action: 'ALLOW', source: '*', destination: WEB, protocol: 'TCP', srcPort: '*', dstPort: '8080' },
    { action: 'ALLOW', source: '*', destination: SSH, protocol: 'TCP', srcPort: '*', dstPort: '22' },
  ],
  N,
  WEB,
  SSH,
);

const checked = (t: Tap.Test, out: NFV) => {
  t.same(violations(out), [], 'the path evaluator finds no claim that does not hold');
  t.same(pathFreeViolations(out), [], 'the path-free evaluator neither');
};

t.test('a configured filter behind a forward table: verdicts through the forwards', async (t) => {
  const requirements = [
    reachability(CLIENT, WEB, tcp('80')), // N:80 -> WEB:8080, allowed
    reachability(CLIENT, SSH, tcp('2222')), // N:2222 -> SSH:22, allowed
    reachability(CLIENT, SSH, tcp('80')), // N:80 goes to WEB only; SSH:80 directly is denied
    isolation(CLIENT, WEB, tcp('2222')), // N:2222 goes to SSH; WEB:2222 directly is denied
    reachability(CLIENT, WEB, tcp('8080')), // N:8080 is delivered to N; WEB:8080 directly is allowed
    isolation(CLIENT, SSH, tcp('443')), // N:443 is delivered to N (the old model sent it to SSH:443, denied too)
  ];
  const { nfv: out } = await simulate(router(filter, requirements));
  t.same(
    out.propertyDefinition.property.map((p) => p.isSat),
    [true, true, false, true, true, true],
  );
  checked(t, out);
  // The evaluators read the table: the same claims on the NAT without it do not hold.
  const stripped = structuredClone(out);
  delete stripped.graphs.graph![0]!.node.find((n) => n.name === N)!.configuration!.nat!.forward;
  t.same(
    violations(stripped).map((v) => v.index),
    [0, 1],
  );
  t.same(
    pathFreeViolations(stripped).map((v) => v.index),
    [0, 1],
  );
  // Without the table (every packet to N goes to each hidden host, ports kept) the first two fail: port 80 and 2222
  // reach no allowed port, and port 80 reaches SSH.
  const { nfv: plain } = await simulate(router(filter, requirements, false));
  t.same(
    plain.propertyDefinition.property.map((p) => p.isSat),
    [false, false, false, true, true, true],
  );
});

t.test('a port forward on the way of an allocated firewall', async (t) => {
  // Isolating WEB on port 80 from the client also forbids WEB:8080, where N forwards port 80: a reachability of
  // WEB:8080 then cannot hold as well. Without the forward table both can.
  const requirements = [isolation(CLIENT, WEB, tcp('80')), reachability(CLIENT, WEB, tcp('8080'))];
  const answer = async (forward: boolean) => {
    try {
      const { nfv: out } = await simulate(router(place('1.0.0.1', N, WEB, SSH), requirements, forward));
      checked(t, out);
      return out.propertyDefinition.property.map((p) => p.isSat);
    } catch (e) {
      return (e as Error).message;
    }
  };
  t.same(await answer(false), [true, true], 'without the table both hold');
  t.not(JSON.stringify(await answer(true)), JSON.stringify([true, true]), 'with it they do not both hold');
});

t.test('entries for some sources and for other destinations than the NAT (DNAT -s, DNAT without -d)', async (t) => {
  const OTHER = '203.0.113.8';
  const forward = [
    // From OTHER only: N:80 to SSH:22; from anyone else the next entry's WEB:8080.
    { protocol: 'TCP' as const, src: OTHER, dstPort: '80', to: SSH, toPort: '22' },
    { protocol: 'TCP' as const, dstPort: '80', to: WEB, toPort: '8080' },
    // Any address of 10.0.0.0/30 (not N) on 8080: to SSH:22.
    { protocol: 'TCP' as const, dst: '10.0.0.0/30', dstPort: '8080', to: SSH, toPort: '22' },
  ];
  const requirements = [
    reachability(CLIENT, WEB, tcp('80')), // N:80 -> WEB:8080
    reachability(OTHER, SSH, tcp('80')), // N:80 from OTHER -> SSH:22
    reachability(OTHER, WEB, tcp('80')), // N:80 from OTHER goes to SSH; WEB:80 directly is denied
    isolation(CLIENT, WEB, tcp('8080')), // WEB:8080 -> SSH:22; N:8080 is delivered to N
    reachability(CLIENT, SSH, tcp('8080')), // SSH:8080 -> SSH:22
    isolation(CLIENT, SSH, tcp('80')), // N:80 from CLIENT goes to WEB; SSH:80 directly is denied
  ];
  const nfv = network(
    [
      webclient(CLIENT, N),
      webclient(OTHER, N),
      [N, 'NAT', [CLIENT, OTHER, '1.0.0.1'], { name: 'n', nat: { source: [WEB, SSH], forward } }],
      filter,
      webserver(WEB, '1.0.0.1'),
      webserver(SSH, '1.0.0.1'),
    ],
    requirements,
  );
  const { nfv: out } = await simulate(nfv);
  t.same(
    out.propertyDefinition.property.map((p) => p.isSat),
    [true, true, false, true, true, true],
  );
  checked(t, out);
  // The evaluators read src and dst: without the first, CLIENT's N:80 goes to SSH; without the second, WEB:8080
  // is WEB's.
  const table = (out: NFV) => out.graphs.graph![0]!.node.find((n) => n.name === N)!.configuration!.nat!.forward!;
  const anySource = structuredClone(out);
  delete table(anySource)[0]!.src;
  const toNat = structuredClone(out);
  delete table(toNat)[2]!.dst;
  for (const [stripped, broken] of [
    [anySource, [0, 5]],
    [toNat, [3]],
  ] as const) {
    t.same(
      violations(stripped).map((v) => v.index),
      broken,
    );
    t.same(
      pathFreeViolations(stripped).map((v) => v.index),
      broken,
    );
  }
});
