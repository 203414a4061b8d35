/**
 * `nfv import --plain` (docs/SEMANTICS.md "Rules with except"): a rule set with a RETURN imports by default as one
 * rule per line, the RETURN's packets as the later line's except entries; with --plain as VEREFOO's plain rules, no
 * except entries, the same verdicts (`firewall diff` of the two nodes finds nothing). A `plain` that is not a
 * boolean is refused naming the field.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { parseImportRequest } from '../../src/ops/imports.js';
import type { Node } from '../../src/model/types.js';
import { cli, scratch } from '../helpers.js';

const RULES = [
  '*filter',
  ':FORWARD DROP [0:0]',
  ':office - [0:0]',
  '-A FORWARD -d 10.0.0.0/16 -j office',
  '-A FORWARD -p tcp --dport 22 -j ACCEPT',
  '-A office -s 10.9.0.0/16 -j RETURN',
  '-A office ! -s 10.1.0.0/16 -p tcp --dport 80 -j ACCEPT',
  '-A office -j DROP',
  'COMMIT',
  '',
].join('\n');

t.test('import: except entries by default, plain rules with --plain, the same verdicts', async (t) => {
  const ws = await scratch(t);
  const dir = await scratch(t);
  const file = path.join(dir, 'rules.v4');
  await writeFile(file, RULES);
  const nodes: Node[] = [];
  for (const extra of [[], ['--plain']]) {
    const out = path.join(dir, `fw${extra.length}.json`);
    const r = await cli(['import', 'iptables', file, '--node', '10.255.0.1', '-o', out, ...extra], { workspace: ws });
    t.equal(r.code, 0, `import ${extra.join(' ')}: ${r.stderr.trim()}`);
    nodes.push(JSON.parse(await readFile(out, 'utf8')) as Node);
  }
  const [folded, plain] = nodes.map((n) => n.configuration!.firewall!.elements!);
  t.ok(
    folded!.some((e) => e.except?.length),
    'the RETURN is an except entry',
  );
  t.notOk(
    plain!.some((e) => e.except),
    '--plain: no except entries',
  );
  t.ok(folded!.length < plain!.length, `${folded!.length} rules, ${plain!.length} plain`);
  const files = await Promise.all(
    nodes.map(async (n, k) => {
      const f = path.join(dir, `node${k}.json`);
      await writeFile(f, JSON.stringify(n));
      return f;
    }),
  );
  const d = await cli(['firewall', 'diff', files[0]!, files[1]!], { workspace: ws });
  t.equal(d.code, 0, `diff: ${d.stderr.trim()}`);
  t.match(d.stdout, /"equivalent": true/, 'no packet decided differently');
  await t.rejects(
    parseImportRequest({ format: 'iptables', text: RULES, node: 'fw', plain: 'yes' }),
    /^plain: true or false$/,
  );
});
