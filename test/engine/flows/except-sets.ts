/**
 * Seeded iptables-save files with user chains, RETURNs and negations, and hosts their prefixes tell apart: the rule
 * sets whose imports keep except boxes (except.part.ts, test/deploy/rules-except.part.ts).
 */
import { random } from '../../../src/model/random.js';

const PREFIXES = ['10.0.0.0/8', '10.1.0.0/16', '10.1.2.0/24', '10.1.2.128/25', '172.16.0.0/12', '10.1.2.5/32'];
export const HOSTS = ['10.1.2.5', '10.1.2.130', '10.1.9.9', '10.7.0.1', '172.16.3.4', '192.168.1.1'];
export const FW = '10.255.0.1';

/** An iptables-save file: FORWARD and up to three user chains, each calling only later ones, RETURNs and negations. */
export function ruleSet(seed: number): string {
  const rnd = random(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)]!;
  const users = Array.from({ length: 1 + Math.floor(rnd() * 3) }, (_, k) => `u${k}`);
  const names = ['FORWARD', ...users];
  const lines = ['*filter', `:FORWARD ${pick(['ACCEPT', 'DROP'])} [0:0]`, ...users.map((u) => `:${u} - [0:0]`)];
  names.forEach((name, k) => {
    const callable = names.slice(k + 1);
    const count = 2 + Math.floor(rnd() * 7);
    for (let i = 0; i < count; i++) {
      const r = rnd();
      const target =
        r < 0.3
          ? 'ACCEPT'
          : r < 0.5
            ? 'DROP'
            : r < 0.75 && k > 0
              ? 'RETURN'
              : callable.length
                ? pick(callable)
                : 'DROP';
      const parts = [`-A ${name}`];
      if (rnd() < 0.6) parts.push(`${rnd() < 0.25 ? '! ' : ''}-s ${pick(PREFIXES)}`);
      if (rnd() < 0.5) parts.push(`${rnd() < 0.15 ? '! ' : ''}-d ${pick(PREFIXES)}`);
      if (rnd() < 0.5) {
        parts.push(`-p ${pick(['tcp', 'udp'])}`);
        if (rnd() < 0.6) parts.push(`${rnd() < 0.2 ? '! ' : ''}--dport ${pick([22, 80, 443])}`);
      }
      parts.push(`-j ${target}`);
      lines.push(parts.join(' '));
    }
  });
  lines.push('COMMIT', '');
  return lines.join('\n');
}
