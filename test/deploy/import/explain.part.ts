/**
 * `firewall explain` (issue 47 item 7) against an interpreter of iptables' chain walk written here from the manual,
 * sharing no code with src: 300 seeded iptables-save files (raw PREROUTING in front of filter FORWARD, user chains
 * called from several places, jumps, gotos, RETURNs in user and base chains, LOG lines without a verdict, `-i`/`-o`
 * by name and by `+` prefix, negations, lines no first packet matches), each asked for sampled packets that name
 * their interfaces: the verdict, the deciding line and every step (jump, goto, return, end of chain, no verdict)
 * are the interpreter's, line for line. The real kernel too: 40 such rule sets (interfaces named as the packet
 * harness has them) loaded by iptables-restore in a namespace, 1,600 packets sent through its forward path
 * (test/deploy/forward.py): nfv's verdict is the kernel's. Then: packets leaving a condition open are UNKNOWN naming
 * what to give, and bad packets are refused naming the field.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { explain, importRules, parsePacket, type ExplainPacket } from '../../../src/deploy/import/index.js';
import { NfvError } from '../../../src/model/errors.js';
import { PYTHON, ROOT, runProcess, scratch, seeded } from '../../helpers.js';

const NAMESPACES = ['-rnp', '--fork', '--kill-child'];
const probe = spawnSync('unshare', [...NAMESPACES, 'iptables', '-S', 'FORWARD'], { encoding: 'utf8' });
const kernelWhy =
  probe.status !== 0
    ? `iptables in a namespace is not available here (${(probe.stderr || String(probe.error)).trim()})`
    : existsSync(PYTHON)
      ? ''
      : `${PYTHON} is not installed here (the packet sender)`;
if (process.env.CI === 'true' && kernelWhy) t.fail(`${kernelWhy}; .ci/run must provide it`);

interface Rule {
  line: number;
  src?: [number, number];
  negSrc: boolean;
  dst?: [number, number];
  proto?: 'tcp' | 'udp';
  dport?: number;
  iif?: string;
  oif?: string;
  negIf: boolean;
  established: boolean;
  target: string;
  goto: boolean;
}

interface Walk {
  chains: Map<string, Rule[]>;
  policies: Map<string, string>;
  bases: string[];
}

const PREFIXES: [number, number][] = [
  [0x0a000000, 8],
  [0x0a010000, 16],
  [0x0a010200, 24],
  [0x0a010205, 32],
  [0xc0a80000, 16],
  [0xc0a80100, 24],
];
const ip = (n: number) => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
const inPrefix = (a: number, [base, len]: [number, number]) => a >>> (32 - len) === base >>> (32 - len);

/** The interfaces lines name: made up, or the kernel harness's (packets enter on in1 and leave on out0). */
const MADE_UP = { in: ['eth0', 'eth1', 'ppp+'], out: ['eth0', 'eth2'] };
const HARNESS = { in: ['in1', 'in0', 'in+'], out: ['out0', 'out1'] };

function generate(seed: number, ifaces = MADE_UP): { text: string; walk: Walk } {
  const { rnd, pick } = seeded(seed);
  const users = Array.from({ length: Math.floor(rnd() * 4) }, (_, k) => `U${k}`);
  const withRaw = rnd() < 0.3;
  const out = ['*raw', ':PREROUTING ACCEPT [0:0]'];
  const chains = new Map<string, Rule[]>();
  const rule = (chain: string, callable: string[]): Rule => {
    const r = rnd();
    const target =
      r < 0.25
        ? 'ACCEPT'
        : r < 0.45
          ? pick(['DROP', 'REJECT'])
          : r < 0.6
            ? 'RETURN'
            : r < 0.7
              ? 'LOG'
              : callable.length
                ? pick(callable)
                : 'DROP';
    const ported = rnd() < 0.4;
    return {
      line: 0,
      ...(rnd() < 0.5 ? { src: pick(PREFIXES) } : {}),
      negSrc: rnd() < 0.15,
      ...(rnd() < 0.4 ? { dst: pick(PREFIXES) } : {}),
      ...(ported
        ? { proto: pick(['tcp', 'udp'] as const), ...(rnd() < 0.7 ? { dport: pick([22, 53, 80]) } : {}) }
        : {}),
      ...(rnd() < 0.25 ? { iif: pick(ifaces.in) } : {}),
      ...(chain !== 'raw/PREROUTING' && rnd() < 0.2 ? { oif: pick(ifaces.out) } : {}),
      negIf: rnd() < 0.2,
      established: rnd() < 0.05,
      target,
      goto: !['ACCEPT', 'DROP', 'REJECT', 'RETURN', 'LOG'].includes(target) && rnd() < 0.3,
    };
  };
  const text = (name: string, r: Rule) => {
    const p = [`-A ${name}`];
    if (r.src) p.push(`${r.negSrc ? '! ' : ''}-s ${ip(r.src[0])}/${r.src[1]}`);
    if (r.dst) p.push(`-d ${ip(r.dst[0])}/${r.dst[1]}`);
    if (r.proto) p.push(`-p ${r.proto}`);
    if (r.dport !== undefined) p.push(`-m ${r.proto} --dport ${r.dport}`);
    if (r.iif) p.push(`${r.negIf ? '! ' : ''}-i ${r.iif}`);
    if (r.oif) p.push(`-o ${r.oif}`);
    if (r.established) p.push('-m conntrack --ctstate RELATED,ESTABLISHED');
    p.push(r.goto ? `-g ${r.target}` : `-j ${r.target}`);
    if (r.target === 'LOG') p.push('--log-prefix "fw: "');
    return p.join(' ');
  };
  if (withRaw) {
    const rules = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => rule('raw/PREROUTING', []));
    for (const r of rules) {
      if (r.target === 'REJECT') r.target = 'DROP'; // REJECT is for filter's chains
      out.push(text('PREROUTING', r));
      r.line = out.length;
    }
    chains.set('raw/PREROUTING', rules);
  }
  out.push('COMMIT');
  const policy = pick(['ACCEPT', 'DROP']);
  out.push('*filter', `:FORWARD ${policy} [0:0]`, ...users.map((u) => `:${u} - [0:0]`));
  const names = ['FORWARD', ...users];
  names.forEach((name, k) => {
    const callable = names.slice(k + 1); // only later chains: no loop
    const rules = Array.from({ length: 1 + Math.floor(rnd() * 6) }, () => rule(`filter/${name}`, callable));
    chains.set(`filter/${name}`, rules);
  });
  // Lines of different chains interleaved, as people write them: each line's number is its own.
  const pending = names.map((n) => ({ name: n, rules: [...chains.get(`filter/${n}`)!] }));
  while (pending.some((p) => p.rules.length)) {
    const p = pick(pending.filter((x) => x.rules.length));
    const r = p.rules.shift()!;
    out.push(text(p.name, r));
    r.line = out.length;
  }
  out.push('COMMIT', '');
  const bases = [...(withRaw ? ['raw/PREROUTING'] : []), 'filter/FORWARD'];
  const policies = new Map([
    ['raw/PREROUTING', 'ACCEPT'],
    ['filter/FORWARD', policy],
  ]);
  return { text: out.join('\n'), walk: { chains, policies, bases } };
}

interface Packet {
  src: number;
  dst: number;
  proto: 'tcp' | 'udp' | '47';
  dport: number;
  iif: string;
  oif: string;
}

/** The kernel's walk of one first packet: every line it matches, `kind@line`, and the verdict. */
function interpret(w: Walk, p: Packet): { steps: string[]; verdict: 'ALLOW' | 'DENY' } {
  const steps: string[] = [];
  const ifMatch = (rule: string, name: string) =>
    rule.endsWith('+') ? name.startsWith(rule.slice(0, -1)) : rule === name;
  const matches = (r: Rule) =>
    (!r.src || inPrefix(p.src, r.src) !== r.negSrc) &&
    (!r.dst || inPrefix(p.dst, r.dst)) &&
    (!r.proto || p.proto === r.proto) &&
    (r.dport === undefined || p.dport === r.dport) &&
    (!r.iif || ifMatch(r.iif, p.iif) !== r.negIf) &&
    (!r.oif || ifMatch(r.oif, p.oif)) &&
    !r.established;
  for (const base of w.bases) {
    const table = base.split('/')[0]!;
    const stack: [string, number][] = [];
    let chain = base;
    let k = 0;
    let result: 'accept' | 'drop' | 'policy' = 'policy';
    for (;;) {
      const rules = w.chains.get(chain)!;
      if (k >= rules.length) {
        if (!stack.length) break;
        steps.push(`end of chain@0`);
        [chain, k] = stack.pop()!;
        continue;
      }
      const r = rules[k++]!;
      if (!matches(r)) continue;
      if (r.target === 'ACCEPT' || r.target === 'DROP' || r.target === 'REJECT') {
        steps.push(`decides@${r.line}`);
        result = r.target === 'ACCEPT' ? 'accept' : 'drop';
        break;
      }
      if (r.target === 'LOG') steps.push(`no verdict@${r.line}`);
      else if (r.target === 'RETURN') {
        steps.push(`return@${r.line}`);
        if (!stack.length) break;
        [chain, k] = stack.pop()!;
      } else {
        steps.push(`${r.goto ? 'goto' : 'jump'}@${r.line}`);
        if (!r.goto) stack.push([chain, k]);
        chain = `${table}/${r.target}`;
        k = 0;
      }
    }
    if (result === 'drop') return { steps, verdict: 'DENY' };
    if (result === 'accept') {
      if (base === 'filter/FORWARD') return { steps, verdict: 'ALLOW' };
      continue;
    }
    const policy = w.policies.get(base)!;
    if (policy === 'DROP' || base === 'filter/FORWARD') {
      steps.push('policy@0');
      return { steps, verdict: policy === 'DROP' ? 'DENY' : 'ALLOW' };
    }
  }
  throw new Error('the filter chain decides');
}

t.test('explain gives the kernel walk of 300 generated rule sets, step by step', async (t) => {
  const { pick } = seeded(9047);
  const address = () => {
    const [base, len] = pick(PREFIXES);
    const size = 2 ** (32 - len);
    return (base + pick([0, 1, size - 1, size, -1, Math.floor(size / 2)])) >>> 0;
  };
  const wrong: string[] = [];
  let packets = 0;
  let deep = 0;
  const verdicts = { ALLOW: 0, DENY: 0 };
  for (let seed = 1; seed <= 300; seed++) {
    const { text, walk } = generate(seed);
    const { set } = importRules('iptables', text, `gen${seed}.rules`);
    for (let k = 0; k < 40; k++) {
      const p: Packet = {
        src: address(),
        dst: address(),
        proto: pick(['tcp', 'udp', '47'] as const),
        dport: pick([22, 53, 80, 443]),
        iif: pick(['eth0', 'eth1', 'ppp0', 'ppp1']),
        oif: pick(['eth0', 'eth1', 'eth2']),
      };
      const asked: ExplainPacket = {
        src: ip(p.src),
        dst: ip(p.dst),
        proto: p.proto,
        ...(p.proto === '47' ? {} : { sport: 40000, dport: p.dport }),
        iif: p.iif,
        oif: p.oif,
      };
      const want = interpret(walk, p);
      const got = explain(set, asked);
      const steps = got.trace.map((s) => `${s.kind}@${s.line}`);
      packets++;
      verdicts[want.verdict]++;
      if (want.steps.some((s) => s.startsWith('return') || s.startsWith('end of chain'))) deep++;
      if (got.verdict !== want.verdict || steps.join() !== want.steps.join())
        wrong.push(
          `gen${seed} ${JSON.stringify(asked)}: nfv ${got.verdict} ${steps}, kernel ${want.verdict} ${want.steps}`,
        );
      else if (got.decidedBy.line !== Number(want.steps[want.steps.length - 1]!.split('@')[1]))
        wrong.push(`gen${seed}: deciding line ${got.decidedBy.where}`);
    }
  }
  t.same(wrong.slice(0, 5), [], `${packets} packets: every verdict, deciding line and step as the kernel walks`);
  t.ok(deep > 500, `${deep} of them return from a chain on their way`);
  t.ok(verdicts.ALLOW > 1000 && verdicts.DENY > 1000, `both verdicts: ${JSON.stringify(verdicts)}`);
});

t.test(
  "explain gives the real kernel's verdict: 40 rule sets loaded by iptables-restore",
  { skip: kernelWhy || false },
  async (t) => {
    const dir = await scratch(t);
    const { pick } = seeded(4711);
    const address = () => {
      const [base, len] = pick(PREFIXES);
      const size = 2 ** (32 - len);
      return (base + pick([0, 1, size - 1, Math.floor(size / 2)])) >>> 0;
    };
    const jobs: { load: string[]; unload: null; packets: (number | string)[][] }[] = [];
    const asked: { seed: number; packets: ExplainPacket[]; text: string }[] = [];
    for (let seed = 1; seed <= 40; seed++) {
      const { text } = generate(1000 + seed, HARNESS);
      const file = path.join(dir, `${seed}.rules`);
      await writeFile(file, text);
      const packets: ExplainPacket[] = [];
      const sent: (number | string)[][] = [];
      for (let k = 0; k < 40; k++) {
        const proto = pick(['tcp', 'udp', '47'] as const);
        // A source port of its own per packet: no packet is part of an earlier one's connection.
        const [src, dst, sport, dport] = [ip(address()), ip(address()), 20000 + k, pick([22, 53, 80, 443])];
        packets.push({ src, dst, proto, ...(proto === '47' ? {} : { sport, dport }), iif: 'in1', oif: 'out0' });
        sent.push([proto === 'tcp' ? 6 : proto === 'udp' ? 17 : 47, src, dst, sport, dport]);
      }
      jobs.push({ load: ['iptables-restore', file], unload: null, packets: sent });
      asked.push({ seed, packets, text });
    }
    const script = path.join(ROOT, 'test', 'deploy', 'forward.py');
    const r = await runProcess(t, 'unshare', [...NAMESPACES, PYTHON, script], JSON.stringify(jobs));
    t.equal(r.code, 0, r.stderr.trim().split('\n').slice(-1)[0]);
    if (r.code !== 0) return;
    const kernel = JSON.parse(r.stdout) as boolean[][];
    const wrong: string[] = [];
    let forwarded = 0;
    for (const [j, a] of asked.entries()) {
      const { set } = importRules('iptables', a.text, `k${a.seed}.rules`);
      a.packets.forEach((p, k) => {
        const real = kernel[j]![k]!;
        if (real) forwarded++;
        const said = explain(set, p);
        if ((said.verdict === 'ALLOW') !== real)
          wrong.push(`k${a.seed} ${JSON.stringify(p)}: kernel ${real}, nfv ${said.verdict} by ${said.decidedBy.where}`);
      });
    }
    const sent = asked.length * 40;
    t.same(wrong.slice(0, 5), [], `${sent} packets: nfv's verdict is the kernel's`);
    t.ok(forwarded > sent / 5 && forwarded < (sent * 4) / 5, `the kernel forwards ${forwarded}, drops the others`);
  },
);

t.test('what the packet leaves open is UNKNOWN, naming what to give; bad packets name their field', async (t) => {
  const text = [
    '*filter',
    ':FORWARD DROP [0:0]',
    '-A FORWARD -i eth1 -j DROP',
    '-A FORWARD -p tcp --sport 1024:65535 --dport 22 -j ACCEPT',
    '-A FORWARD -m limit --limit 5/min -j ACCEPT',
    'COMMIT',
    '',
  ].join('\n');
  const { set } = importRules('iptables', text, 'f.rules');
  const ask = (packet: string) => explain(set, parsePacket(packet));
  t.match(ask('src=1.1.1.1 dst=2.2.2.2 proto=tcp dport=22'), {
    verdict: 'UNKNOWN',
    decidedBy: { where: 'f.rules:3', why: /-i eth1: interface not mapped.*iif=NAME/ },
  });
  t.match(ask('src=1.1.1.1 dst=2.2.2.2 proto=tcp dport=22 iif=eth0'), {
    verdict: 'UNKNOWN',
    decidedBy: { where: 'f.rules:4', why: /give sport/ },
  });
  t.match(ask('src=1.1.1.1 dst=2.2.2.2 proto=tcp sport=2000 dport=22 iif=eth0'), {
    verdict: 'ALLOW',
    decidedBy: { where: 'f.rules:4', line: 4, file: 'f.rules' },
  });
  t.match(ask('src=1.1.1.1 dst=2.2.2.2 proto=udp sport=2000 dport=22 iif=eth0'), {
    verdict: 'UNKNOWN',
    decidedBy: { line: 5, why: /-m limit/ },
  });
  t.match(ask('src=1.1.1.1 dst=2.2.2.2 proto=tcp sport=2000 dport=22 iif=eth1'), {
    verdict: 'DENY',
    decidedBy: { line: 3 },
  });
  const refusals: [string, RegExp][] = [
    ['dst=2.2.2.2 proto=tcp', /^packet: src is required/],
    ['src=1.1.1 dst=2.2.2.2 proto=tcp', /^packet: src=1\.1\.1 is not an IPv4 address$/],
    ['src=1.1.1.1 dst=2.2.2.256 proto=tcp', /^packet: dst=2\.2\.2\.256/],
    ['src=1.1.1.1 dst=2.2.2.2', /^packet: proto is required/],
    ['src=1.1.1.1 dst=2.2.2.2 proto=tcp dport=70000', /^packet: dport=70000 is not a port/],
    ['src=1.1.1.1 dst=2.2.2.2 proto=icmp dport=1', /^packet: dport needs proto tcp or udp$/],
    ['src=1.1.1.1 dst=2.2.2.2 proto=tcp color=red', /^packet: color is not a field/],
    ['src=1.1.1.1 dst=2.2.2.2 proto=tcp src=3.3.3.3', /^packet: src given twice$/],
    ['src 1.1.1.1', /^packet: src is not FIELD=VALUE/],
  ];
  for (const [packet, message] of refusals) {
    let said = '';
    try {
      parsePacket(packet);
    } catch (e) {
      said = e instanceof NfvError && e.status === 400 ? e.message : String(e);
    }
    t.match(said, message, packet);
  }
});
