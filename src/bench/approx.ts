/**
 * `npm run bench:approx -- DIR`: how much of each real dump nfv reads exactly (issue 47, item 5). Every file of DIR
 * (iptables-save text; `NAME.routes` beside it is its `--routes`, `NAME.neigh` its `--neighbours`) is imported with
 * FORWARD and with INPUT as the deciding chain (`--ignore-nat`: translations are another part's), and a Markdown
 * table says per dump and chain the lines reached, how many are exact (exact, new-connection and no-verdict: read
 * as the kernel reads them), how many approximated (and of those, by `-m mac` alone), and the refusal when there is
 * one. docs/firewalls.md holds its table for the Iptables_Semantics corpus.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { importRules, macMap, routeMap } from '../deploy/import/index.js';

const dir = process.argv[2];
if (!dir) {
  process.stderr.write(
    'usage: node dist/bench/approx.js DIR (iptables-save files, NAME.routes and NAME.neigh beside)\n',
  );
  process.exit(2);
}
const rows: string[] = [];
let reachedAll = 0;
let exactAll = 0;
let macAll = 0;
const reasons = new Map<string, number>();
for (const file of readdirSync(dir).sort()) {
  if (/\.(routes|neigh|ipset|md)$|NOTICE/.test(file)) continue;
  const text = readFileSync(path.join(dir, file), 'utf8');
  const beside = (ext: string) => {
    try {
      return readFileSync(path.join(dir, `${file}.${ext}`), 'utf8');
    } catch {
      return undefined;
    }
  };
  const routes = beside('routes');
  const neigh = routes === undefined ? undefined : beside('neigh');
  const iface = routes === undefined ? undefined : routeMap(routes, `${file}.routes`);
  const macs = neigh === undefined ? undefined : macMap(routes!, neigh, `${file}.routes`, `${file}.neigh`);
  for (const chain of ['FORWARD', 'INPUT']) {
    const name = `${file}${iface ? ' (+routes)' : ''}${macs ? ' (+neigh)' : ''}`;
    try {
      const { lines, counts } = importRules('iptables', text, file, {
        chain,
        ignoreNat: true,
        ...(iface ? { iface } : {}),
        ...(macs ? { macs } : {}),
      }).report;
      if (!lines.length) continue;
      const exact = lines.length - counts.approximated - counts.refused;
      const approximated = lines.filter((l) => l.class === 'approximated');
      const mac = approximated.filter((l) => /^-m mac: [^;]*$/.test(l.reason ?? '')).length;
      for (const l of approximated)
        for (const why of (l.reason ?? '').split('; ')) {
          // `-i eth0: ...` counts as `-i`, `-m mac: ...` as `-m mac`.
          const kind = why.replace(/^(-[io]) \S+: .*/, '$1').replace(/:.*$/, '');
          reasons.set(kind, (reasons.get(kind) ?? 0) + 1);
        }
      reachedAll += lines.length;
      exactAll += exact;
      macAll += mac;
      const share = ((100 * exact) / lines.length).toFixed(1);
      rows.push(`| ${name} | ${chain} | ${lines.length} | ${exact} | ${approximated.length} | ${mac} | ${share} % |`);
    } catch (e) {
      const why = (e instanceof Error ? e.message : String(e)).replace(/\|/g, '/').slice(0, 90);
      rows.push(`| ${name} | ${chain} | refused: ${why} | | | | |`);
    }
  }
}
const lines = [
  '| dump | chain | reached | exact | approximated | of which -m mac only | exact share |',
  '|---|---|--:|--:|--:|--:|--:|',
  ...rows,
  `| **all** | | ${reachedAll} | ${exactAll} | ${reachedAll - exactAll} | ${macAll} | ` +
    `${((100 * exactAll) / reachedAll).toFixed(1)} % |`,
  '',
  `Without -m mac lines: ${((100 * exactAll) / (reachedAll - macAll)).toFixed(1)} % exact.`,
  '',
  'Approximations by kind (a line may have several):',
  '',
  ...[...reasons]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, 20)
    .map(([k, n]) => `- ${n} \`${k}\``),
];
process.stdout.write(`${lines.join('\n')}\n`);
const usage = process.cpuUsage();
process.stderr.write(`cpu ${((usage.user + usage.system) / 1e6).toFixed(1)} s\n`);
