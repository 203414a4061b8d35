/**
 * nftables output judged by nft and the kernel, in user and network namespaces (`unshare -rn`): `nft -c` (parser and
 * kernel check) accepts 1,000 seeded random rule lists as text, with and without --sets, stateful (the default) and
 * --stateless in turn. The same lists as JSON: nftables-json.test.ts and nftables-json-2.part.ts; listed back after
 * loading: nftables-list.part.ts (run in this process); real packets and connections: nftables-packets.part.ts;
 * change scripts: nftables-change.test.ts. Without nft or unshare the tests are skipped, saying why (under CI=true
 * that fails: .ci/run installs nftables).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { nftables } from '../../src/deploy/nftables.js';
import { scratch } from '../helpers.js';
import { generator, inWorkers, ruleLines, skipNft, unshared } from './nft-harness.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './nftables-list.part.js';

t.test('nft -c accepts 1,000 random rule lists as text, with and without --sets', { skip: skipNft }, async (t) => {
  const dir = path.join(await scratch(t), 'lists');
  await mkdir(dir);
  const g = generator(2311);
  const files: { text: string[] } = { text: [] };
  let rules = 0;
  let grouped = 0;
  for (let k = 0; k < 1000; k++) {
    const node = g.firewall(40);
    for (const sets of [false, true]) {
      // Stateful (the default) and stateless in turn.
      const options = { sets, stateless: k % 2 === 1 };
      const text = nftables(node, k, options);
      if (sets) grouped += ruleLines(text).length;
      else rules += ruleLines(text).length;
      if ((ruleLines(text)[0] === '\t\tct state established,related accept') === options.stateless)
        t.fail(`list ${k}: the first rule is not what ${options.stateless ? '--stateless' : 'stateful'} writes`);
      const name = path.join(dir, `${k}${sets ? '.sets' : ''}`);
      await writeFile(`${name}.nft`, text);
      files.text.push(`${name}.nft`);
    }
  }
  // A control: the check must see a file nft refuses (a range upside down).
  const bad = path.join(dir, 'bad.nft');
  await writeFile(bad, nftables(g.firewall(0), 0).replace(/policy (\w+);/, 'policy $1;\n\t\ttcp dport 80-70 drop'));
  const started = Date.now();
  // One `nft -c -i` per namespace, one `include` per file: each is its own checked (never committed) transaction,
  // and an error names the file and line.
  const text = await inWorkers([bad, ...files.text], 2, (slice) =>
    // No limit of its own: tap's per file is the bound (a namespace cut at runProcess's default minute, as on a
    // loaded machine, left its files unchecked and said nothing).
    unshared(t, ['nft', '-c', '-i'], slice.map((f) => `include "${f}"\n`).join(''), 600_000),
  );
  t.same(
    text.map((r) => r.code),
    text.map(() => 0),
    'every namespace checked all its files',
  );
  const errors = text.map((r) => r.stderr).join('');
  t.comment(`text checked in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  t.match(errors, /bad\.nft:\d+:\d+-\d+: Error: Range has zero or negative size/, 'the refused control is said');
  const others = errors.split('In file included from').filter((e) => e.trim() && !e.includes('bad.nft'));
  t.same(others, [], `nft -c accepts all ${files.text.length} text files`);
  t.comment(
    `1,000 lists: ${rules} nft rules, ${grouped} with --sets; ${files.text.length + 1} files checked in ` +
      `${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  t.ok(grouped < rules, 'sets group rules');
});
