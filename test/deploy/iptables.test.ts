/**
 * The iptables change script between two rule lists, applied by the real iptables: in a fresh network namespace
 * the old list is loaded, the script applied with --noflush, and the chain must equal the new list loaded alone.
 */
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { random } from '../../src/bench/topology.js';
import { iptables, iptablesChange } from '../../src/deploy/iptables.js';
import type { Elements, Node } from '../../src/model/types.js';

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
  spawnSync('unshare', ['-rn', 'sh', '-c', script], { encoding: 'utf8', timeout: 10_000 });
const probe = inNamespace('iptables -S FORWARD');
const usable = probe.status === 0;

t.test(
  'the script takes the chain from the old list to the new one',
  { skip: !usable && `iptables in a network namespace is not available here (${probe.stderr || probe.error})` },
  async (t) => {
    const rnd = random(17);
    for (let k = 0; k < 25; k++) {
      const list = () => Array.from({ length: Math.floor(rnd() * 6) }, () => pooled(rnd));
      const old = firewall(rnd() < 0.5 ? 'ALLOW' : 'DENY', list());
      const next = firewall(rnd() < 0.5 ? 'ALLOW' : 'DENY', list());
      const change = iptablesChange(old, next, 'test');
      const quoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
      const applied = inNamespace(
        `printf %s ${quoted(iptables(old, 1))} | iptables-restore && ` +
          `printf %s ${quoted(change)} | iptables-restore --noflush && iptables -S FORWARD`,
      );
      const fresh = inNamespace(`printf %s ${quoted(iptables(next, 1))} | iptables-restore && iptables -S FORWARD`);
      if (applied.status !== 0) t.fail(`case ${k}: ${applied.stderr}\n${change}`);
      else if (applied.stdout !== fresh.stdout) t.fail(`case ${k}:\n${change}\ngave\n${applied.stdout}`);
      else t.pass(`case ${k}: ${change.split('\n')[0]}`);
    }
  },
);

t.test('rules that stay are not touched', async (t) => {
  const keep: Elements = { action: 'ALLOW', source: '10.0.1.-1', destination: '20.0.0.1', protocol: 'ANY' };
  const added: Elements = { ...keep, source: '10.9.9.9', action: 'DENY' };
  const change = iptablesChange(firewall('DENY', [keep]), firewall('DENY', [added, keep]), 'test');
  t.match(change, /0 deleted, 1 inserted, policy DROP\n/);
  t.match(change, /\n-I FORWARD 1 -s 10\.9\.9\.9\/32 /);
  t.notMatch(change, /-D FORWARD/);
  t.match(iptablesChange(firewall('DENY', []), firewall('ALLOW', []), 'test'), /policy DROP -> ACCEPT\n/);
});
