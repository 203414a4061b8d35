/**
 * nftables output judged by nft and the kernel, in user and network namespaces (`unshare -rn`): `nft -c` (parser and
 * kernel check) accepts 1,000 seeded random rule lists, as text and JSON, with and without --sets, stateful (the
 * default) and --stateless in turn; loaded, a list is listed back exactly as nfv wrote it (from JSON too). Real
 * packets and connections are in nftables-packets.test.ts, change scripts in nftables-change.test.ts (one file each,
 * so that none runs past tap's limit on a busy machine). Without nft or unshare the tests are skipped, saying why
 * (under CI=true that fails: .ci/run installs nftables).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { nftables, nftablesJson } from '../../src/deploy/nftables.js';
import { runProcess, scratch } from '../helpers.js';
import { NAMESPACES, body, generator, inWorkers, ruleLines, skipNft, sortedSets } from './nft-harness.js';

t.test(
  'nft -c accepts 1,000 random rule lists as text and JSON, with and without --sets',
  { skip: skipNft },
  async (t) => {
    const dir = path.join(await scratch(t), 'lists');
    await mkdir(dir);
    const g = generator(2311);
    const files: { text: string[]; json: string[] } = { text: [], json: [] };
    let rules = 0;
    let grouped = 0;
    for (let k = 0; k < 1000; k++) {
      const node = g.firewall(40);
      for (const sets of [false, true]) {
        // Stateful (the default) and stateless in turn.
        const options = { sets, stateless: k % 2 === 1 };
        const text = nftables(node, k, options);
        const json = nftablesJson(node, k, options);
        if (sets) grouped += ruleLines(text).length;
        else rules += ruleLines(text).length;
        if ((ruleLines(text)[0] === '\t\tct state established,related accept') === options.stateless)
          t.fail(`list ${k}: the first rule is not what ${options.stateless ? '--stateless' : 'stateful'} writes`);
        const name = path.join(dir, `${k}${sets ? '.sets' : ''}`);
        await writeFile(`${name}.nft`, text);
        files.text.push(`${name}.nft`);
        await writeFile(`${name}.json`, json);
        files.json.push(`${name}.json`);
      }
    }
    // A control: the check must see a file nft refuses (a range upside down).
    const bad = path.join(dir, 'bad.nft');
    await writeFile(bad, nftables(g.firewall(0), 0).replace(/policy (\w+);/, 'policy $1;\n\t\ttcp dport 80-70 drop'));
    const started = Date.now();
    // One `nft -c -i` per namespace, one `include` per file: each is its own checked (never committed) transaction,
    // and an error names the file and line.
    const text = await inWorkers([bad, ...files.text], 8, (slice) =>
      runProcess(t, 'unshare', [...NAMESPACES, 'nft', '-c', '-i'], slice.map((f) => `include "${f}"\n`).join('')),
    );
    const errors = text.map((r) => r.stderr).join('');
    t.comment(`text checked in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    t.match(errors, /bad\.nft:\d+:\d+-\d+: Error: Range has zero or negative size/, 'the refused control is said');
    const others = errors.split('In file included from').filter((e) => e.trim() && !e.includes('bad.nft'));
    t.same(others, [], `nft -c accepts all ${files.text.length} text files`);
    // JSON: `nft -j -c -f` per file (its interactive mode costs ten times the CPU per document). A control again.
    const badJson = path.join(dir, 'bad.json');
    await writeFile(badJson, nftablesJson(g.firewall(0), 0).replace('"policy":"', '"policy":"x'));
    const json = await inWorkers([badJson, ...files.json], 8, async (slice) => {
      const script = 'for f do nft -j -c -f "$f" >/dev/null 2>&1 || echo "$f"; done';
      const r = await runProcess(t, 'unshare', [...NAMESPACES, 'sh', '-c', script, 'sh', ...slice]);
      return r.stdout.split('\n').filter(Boolean);
    });
    t.same(json.flat().slice(0, 1), [badJson], 'the refused JSON control is said');
    t.same(json.flat().slice(1), [], `nft -j -c accepts all ${files.json.length} JSON files`);
    t.comment(
      `1,000 lists: ${rules} nft rules, ${grouped} with --sets; ${files.text.length + files.json.length + 2} files ` +
        `checked in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    t.ok(grouped < rules, 'sets group rules');
  },
);

t.test('loaded, a list is listed exactly as written, from text and from JSON', { skip: skipNft }, async (t) => {
  const dir = await scratch(t);
  const g = generator(977);
  const cases: { file: string; sets: boolean; expected: string }[] = [];
  for (let k = 0; k < 150; k++) {
    const node = g.firewall(30);
    for (const sets of [false, true]) {
      const options = { sets, stateless: k % 2 === 1 };
      const text = nftables(node, k, options);
      const name = path.join(dir, `${k}${sets ? '.sets' : ''}`);
      await writeFile(`${name}.nft`, text);
      await writeFile(`${name}.json`, nftablesJson(node, k, options));
      cases.push(
        { file: `${name}.nft`, sets, expected: body(text) },
        { file: `${name}.json`, sets, expected: body(text) },
      );
    }
  }
  const MARK = '@@nfv@@';
  const listed = await inWorkers(cases, 8, async (slice) => {
    const script =
      'for f do case "$f" in *.json) j=-j;; *) j=;; esac; ' + `nft $j -f "$f" && nft list ruleset; echo ${MARK}; done`;
    const r = await runProcess(t, 'unshare', [...NAMESPACES, 'sh', '-c', script, 'sh', ...slice.map((c) => c.file)]);
    return r.stdout.split(`${MARK}\n`).slice(0, slice.length);
  });
  const differ = listed.flat().flatMap((out, k) => {
    const { expected, sets } = cases[k]!;
    // Exactly; with sets, each set's elements in any order (nft lists a set of single values in its hash order).
    if (sets ? sortedSets(out) === sortedSets(expected) : out === expected) return [];
    const want = expected.split('\n');
    const got = out.split('\n');
    const at = want.findIndex((l, i) => l !== got[i]);
    return [
      `${cases[k]!.file}, line ${at + 1}: wrote ${JSON.stringify(want[at])}, nft lists ${JSON.stringify(got[at])}`,
    ];
  });
  t.same(differ.slice(0, 5), [], `${cases.length - differ.length} of ${cases.length} listings equal the file`);
});
