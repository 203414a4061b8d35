/**
 * Change scripts between two rule lists. iptables: applied by the real iptables in a fresh network namespace (the
 * old list loaded, the script applied with --noflush, the chain equal to the new list loaded alone). ipfw: applied
 * by a small interpreter of its add and delete commands; FortiOS by one of its edit, delete and move commands.
 * Open vSwitch: parsed by the real ovs-ofctl. Stateful (the default: the conntrack rules at the head stay) and
 * stateless alike.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { random } from '../../src/bench/topology.js';
import { fortios, fortiosChange } from '../../src/deploy/fortios.js';
import { ipfw, ipfwChange } from '../../src/deploy/ipfw.js';
import { iptables, iptablesChange } from '../../src/deploy/iptables.js';
import { openVswitchChange } from '../../src/deploy/openvswitch.js';
import type { Elements, Node } from '../../src/model/types.js';
import { runProcess, scratch } from '../helpers.js';

const firewall = (defaultAction: 'ALLOW' | 'DENY', elements: Elements[]): Node => ({
  name: '10.0.0.254',
  functionalType: 'FIREWALL',
  configuration: { name: 'fw', firewall: { defaultAction, elements } },
});

/** A rule from a small pool, so that two lists share some and differ in others. */
const pooled = (rnd: () => number): Elements => ({
  action: rnd() < 0.5 ? 'ALLOW' : 'DENY',
  source: `10.0.${Math.floor(rnd() * 3)}.-1`,
  destination: `20.0.0.${1 + Math.floor(rnd() * 3)}`,
  protocol: rnd() < 0.5 ? 'TCP' : 'ANY',
  srcPort: '*',
  dstPort: rnd() < 0.5 ? '*' : String(80 + Math.floor(rnd() * 2)),
});

const inNamespace = (script: string) =>
  spawnSync('unshare', ['-rn', 'sh', '-c', script], { encoding: 'utf8', timeout: 120_000 });
const probe = inNamespace('iptables -S FORWARD');
const usable = probe.status === 0;

t.test(
  'the script takes the chain from the old list to the new one',
  { skip: !usable && `iptables in a network namespace is not available here (${probe.stderr || probe.error})` },
  async (t) => {
    const rnd = random(17);
    const quoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
    const cases = Array.from({ length: 40 }, (_, k) => {
      const list = () => Array.from({ length: Math.floor(rnd() * 6) }, () => pooled(rnd));
      const old = firewall(rnd() < 0.5 ? 'ALLOW' : 'DENY', list());
      const next = firewall(rnd() < 0.5 ? 'ALLOW' : 'DENY', list());
      // Half stateful (the default), half stateless: the change is for files deploy wrote the same way.
      const options = { stateless: k % 2 === 1 };
      const change = iptablesChange(old, next, 'test', options);
      // The old list loaded, the change applied, then the new list loaded alone: iptables-restore without
      // --noflush replaces the whole filter table, so each load starts afresh and every case shares one namespace
      // (a namespace, sh and unshare per case were a third of the processes). Each case's end and exit code is
      // said on stdout and stderr.
      const script =
        `{ printf %s ${quoted(iptables(old, 1, options))} | iptables-restore && ` +
        `printf %s ${quoted(change)} | iptables-restore --noflush && iptables -S FORWARD && echo '#FRESH' && ` +
        `printf %s ${quoted(iptables(next, 1, options))} | iptables-restore && iptables -S FORWARD; }; ` +
        `echo "#CASE $?"; echo '#CASE' >&2`;
      return { change, options, script, label: `case ${k}${options.stateless ? ' stateless' : ''}` };
    });
    const run = await runProcess(t, 'unshare', ['-rn', 'sh', '-s'], cases.map((c) => `${c.script}\n`).join(''));
    const outs = run.stdout.split(/^#CASE (\d+)\n/m);
    const errs = run.stderr.split('#CASE\n');
    for (const [k, { change, options, label }] of cases.entries()) {
      // A case the run never reached has no status: it fails with what the run said.
      const [stdout = '', status = 'none', stderr = run.stderr] = [outs[2 * k], outs[2 * k + 1], errs[k]];
      const [applied = '', fresh] = stdout.split('#FRESH\n');
      if (status !== '0' && fresh === undefined) t.fail(`${label}: ${stderr}\n${change}`);
      else if (status !== '0' || applied !== fresh) t.fail(`${label}:\n${change}\ngave\n${applied}`);
      else t.pass(`${label}: ${change.split('\n')[0]}`);
      const head = /^-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT$/m;
      if (options.stateless ? head.test(applied) : !head.test(applied.split('\n')[1] ?? ''))
        t.fail(`${label}: the conntrack rule is ${options.stateless ? 'there' : 'not first'}\n${applied}`);
    }
  },
);

t.test('rules that stay are not touched', async (t) => {
  const keep: Elements = { action: 'ALLOW', source: '10.0.1.-1', destination: '20.0.0.1', protocol: 'ANY' };
  const added: Elements = { ...keep, source: '10.9.9.9', action: 'DENY' };
  const change = iptablesChange(firewall('DENY', [keep]), firewall('DENY', [added, keep]), 'test', { stateless: true });
  t.match(change, /0 deleted, 1 inserted, policy DROP\n/);
  t.match(change, /\n-I FORWARD 1 -s 10\.9\.9\.9\/32 /);
  t.notMatch(change, /-D FORWARD/);
  const stateful = iptablesChange(firewall('DENY', [keep]), firewall('DENY', [added, keep]), 'test');
  t.match(stateful, /0 deleted, 1 inserted, policy DROP\n/);
  t.match(
    stateful,
    /\n# for a chain nfv deploy iptables wrote stateful: its rule 1 \(conntrack ESTABLISHED,RELATED\) stays/,
  );
  t.match(stateful, /\n-I FORWARD 2 -s 10\.9\.9\.9\/32 /, 'stateful: after the conntrack rule, which stays');
  t.notMatch(stateful, /-D FORWARD/);
  t.match(
    iptablesChange(firewall('DENY', [keep, added]), firewall('DENY', [added]), 'test'),
    /\n-D FORWARD 2\n/,
    'stateful: rule 1 of the list is rule 2 of the chain',
  );
  t.match(iptablesChange(firewall('DENY', []), firewall('ALLOW', []), 'test'), /policy DROP -> ACCEPT\n/);
});

/** The rule list an ipfw script leaves (by rule number), read by a small interpreter of add, delete and flush. */
function ipfwApplied(list: Map<number, string>, script: string): Map<number, string> {
  const out = new Map(list);
  for (const line of script.split('\n')) {
    const m = /^\$\{cmd\} (?:-f )?(add|delete|flush) ?(\d+)? ?(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === 'flush') out.clear();
    else if (m[1] === 'delete') {
      if (!out.delete(Number(m[2]))) throw new Error(`delete ${m[2]}: no such rule`);
    } else {
      if (out.has(Number(m[2]))) throw new Error(`add ${m[2]}: the number is taken`);
      out.set(Number(m[2]), m[3]!);
    }
  }
  return out;
}
const inOrder = (rules: Map<number, string>) => [...rules].sort((a, b) => a[0] - b[0]).map(([, body]) => body);

t.test('ipfw: the change script leaves the new list in order, kept rules under their numbers', async (t) => {
  const rnd = random(23);
  let checked = 0;
  for (let k = 0; k < 400; k++) {
    const list = () => Array.from({ length: Math.floor(rnd() * 8) }, () => pooled(rnd));
    const old = firewall(rnd() < 0.5 ? 'ALLOW' : 'DENY', list());
    const next = firewall(rnd() < 0.5 ? 'ALLOW' : 'DENY', list());
    const options = { stateless: k % 2 === 1 };
    const deployed = ipfwApplied(new Map(), ipfw(old, 1, options));
    const script = ipfwChange(old, next, 'test', options);
    const after = ipfwApplied(deployed, script);
    const changed = inOrder(after);
    const fresh = inOrder(ipfwApplied(new Map(), ipfw(next, 1, options)));
    if (changed.join('\n') !== fresh.join('\n')) t.fail(`case ${k}:\n${script}`);
    else if (!options.stateless && after.get(1) !== 'check-state') t.fail(`case ${k}: rule 1 is not check-state`);
    else checked++;
  }
  t.equal(checked, 400, 'stateful and stateless: 200 changes each leave the new list');
  const keep: Elements = { action: 'ALLOW', source: '10.0.1.-1', destination: '20.0.0.1', protocol: 'ANY' };
  const [before, after] = [firewall('DENY', [keep]), firewall('DENY', [{ ...keep, source: '10.9.9.9' }, keep])];
  const script = ipfwChange(before, after, 't', { stateless: true });
  t.match(script, /: 0 deleted, 1 added;/);
  t.match(
    script,
    /\n\$\{cmd\} add 50 allow ip from 10\.9\.9\.9\/32 to 20\.0\.0\.1\/32\n/,
    'in the gap before rule 100',
  );
  const stateful = ipfwChange(before, after, 't');
  t.match(stateful, /: 0 deleted, 1 added; .* \(rule 1, check-state, stays\)\n/);
  t.match(
    stateful,
    /\n\$\{cmd\} add 50 allow ip from 10\.9\.9\.9\/32 to 20\.0\.0\.1\/32 keep-state\n/,
    'stateful: in the gap between check-state (1) and rule 100, with keep-state',
  );
});

t.test('Open vSwitch: the new table for an atomic replace-flows, and what really changes', async (t) => {
  const keep: Elements = { action: 'DENY', source: '10.0.1.-1', destination: '20.0.0.1', protocol: 'ANY' };
  const [before, after] = [firewall('ALLOW', [keep]), firewall('ALLOW', [keep, { ...keep, source: '10.2.0.1' }])];
  const text = openVswitchChange(before, after, 't', { stateless: true });
  t.match(
    text,
    /^# nfv: firewall 10\.0\.0\.254, t: 0 flows removed, 1 added; apply with: ovs-ofctl --bundle replace-flows /,
  );
  const stateful = openVswitchChange(before, after, 't');
  t.match(stateful, /^# nfv: firewall 10\.0\.0\.254, t: 0 flows removed, 1 added; /, 'the conntrack flows stay');
  t.match(
    stateful,
    /\n# stateful: .*\ntable=0,priority=1,ip,ct_state=-trk,actions=ct\(table=1\)\n/,
    'in the new table',
  );
  t.match(
    openVswitchChange(before, firewall('DENY', [keep]), 't'),
    /: 2 flows removed, 2 added; /,
    'a default that changes is a flow in each table',
  );
  const probe = spawnSync('ovs-ofctl', ['--version']);
  if (probe.error) return t.skip('ovs-ofctl not installed (.ci/run installs it)');
  const dir = await scratch(t);
  for (const [name, flows] of Object.entries({ stateless: text, stateful })) {
    const file = path.join(dir, name);
    writeFileSync(file, flows);
    const check = spawnSync('ovs-ofctl', ['parse-flows', file], { encoding: 'utf8' });
    t.equal(check.status, 0, `${name}: ovs-ofctl parse-flows: ${check.stderr}`);
  }
});

/**
 * A FortiOS firewall as a small interpreter sees it: address and service objects by name, policies in list order,
 * each resolved to what it matches (`edit` of a new id appends, `delete` removes, `move A before B` reorders).
 */
class Forti {
  readonly objects = new Map<string, string>();
  readonly policies = new Map<number, Map<string, string>>();
  order: number[] = [];
  apply(text: string): this {
    let section = '';
    let current: { kind: 'object'; name: string } | { kind: 'policy'; id: number } | undefined;
    for (const raw of text.split('\n')) {
      const line = raw.trim();
      let m: RegExpExecArray | null;
      if ((m = /^config (.*)$/.exec(line))) section = m[1]!;
      else if ((m = /^edit "(.*)"$/.exec(line))) current = { kind: 'object', name: m[1]! };
      else if ((m = /^edit (\d+)$/.exec(line))) {
        const id = Number(m[1]);
        if (!this.policies.has(id)) {
          this.policies.set(id, new Map());
          this.order.push(id);
        }
        current = { kind: 'policy', id };
      } else if ((m = /^set (\S+) (.*)$/.exec(line)) && current) {
        if (current.kind === 'object') {
          const prior = this.objects.get(current.name) ?? '';
          this.objects.set(current.name, `${prior}${section}:${m[1]}=${m[2]};`);
        } else this.policies.get(current.id)!.set(m[1]!, m[2]!);
      } else if ((m = /^delete (\d+)$/.exec(line))) {
        if (!this.policies.delete(Number(m[1]))) throw new Error(`delete ${m[1]}: no such policy`);
        this.order = this.order.filter((id) => id !== Number(m![1]));
      } else if ((m = /^move (\d+) before (\d+)$/.exec(line))) {
        const [id, anchor] = [Number(m[1]), Number(m[2])];
        this.order = this.order.filter((x) => x !== id);
        this.order.splice(this.order.indexOf(anchor), 0, id);
      } else if (line === 'next') current = undefined;
    }
    return this;
  }
  /** Each policy as what it matches and does, in list order. */
  resolved(): string[] {
    const named = (v: string | undefined) => {
      const name = (v ?? '').replace(/"/g, '');
      return name === 'all' || name === 'ALL' ? name : (this.objects.get(name) ?? `missing ${name}`);
    };
    return this.order.map((id) => {
      const p = this.policies.get(id)!;
      return [named(p.get('srcaddr')), named(p.get('dstaddr')), named(p.get('service')), p.get('action')].join(' | ');
    });
  }
}

t.test('FortiOS: the change script leaves the new policy list in order', async (t) => {
  const rnd = random(29);
  for (let k = 0; k < 200; k++) {
    const list = () => Array.from({ length: Math.floor(rnd() * 7) }, () => pooled(rnd));
    const old = firewall(rnd() < 0.5 ? 'ALLOW' : 'DENY', list());
    const next = firewall(rnd() < 0.5 ? 'ALLOW' : 'DENY', list());
    const script = fortiosChange(old, next, 'test');
    const changed = new Forti().apply(fortios(old, 1)).apply(script).resolved();
    const fresh = new Forti().apply(fortios(next, 2)).resolved();
    if (changed.join('\n') !== fresh.join('\n')) t.fail(`case ${k}:\n${script}\n${changed.join('\n')}`);
  }
  const keep: Elements = { action: 'ALLOW', source: '10.0.1.-1', destination: '20.0.0.1', protocol: 'ANY' };
  const script = fortiosChange(
    firewall('DENY', [keep]),
    firewall('DENY', [{ ...keep, source: '10.9.9.9' }, keep]),
    't',
  );
  t.match(script, /: 0 deleted, 1 added;/);
  t.match(script, /\n {4}edit 3\n[\s\S]*\n {4}move 3 before 1\n/, 'the new policy goes before the kept one');
});
