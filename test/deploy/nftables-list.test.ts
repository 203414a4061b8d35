/**
 * nftables output loaded into the kernel, in user and network namespaces (`unshare -rn`), and listed back: exactly as
 * nfv wrote it, from text and from JSON, for 150 seeded random rule lists with and without --sets (stateful and
 * --stateless in turn). Apart from nftables.test.ts (nft -c on 1,000 lists) so that neither file runs past tap's limit
 * on a busy machine. Without nft or unshare the test is skipped, saying why.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { nftables, nftablesJson } from '../../src/deploy/nftables.js';
import { runProcess, scratch } from '../helpers.js';
import { NAMESPACES, body, generator, inWorkers, skipNft, sortedSets } from './nft-harness.js';

interface Case {
  file: string;
  sets: boolean;
  expected: string;
}

/** The listings of `cases` (text files), each loaded then listed by one `nft -i` per namespace. */
async function listedText(t: Tap.Test, cases: Case[]): Promise<string[]> {
  const listed = await inWorkers(cases, 8, async (slice) => {
    // One process, one transaction per line (as `nft -f` per file, at a tenth of the processes' wall time when
    // the machine is loaded); each listing starts at its one table, which splits them apart.
    const input = slice.map((c) => `include "${c.file}"\nlist ruleset\n`).join('');
    const r = await runProcess(t, 'unshare', [...NAMESPACES, 'nft', '-i'], input);
    const listings = r.stdout.split(/(?=^table ip nfv \{$)/m);
    // A load refused or a listing without the table: the count is off, and the listings are all reported.
    return listings.length === slice.length ? listings : slice.map(() => r.stdout + r.stderr);
  });
  return listed.flat();
}

/** The listings of `cases` (JSON files): `nft -j -f` then `nft list ruleset`, per file. */
async function listedJson(t: Tap.Test, cases: Case[]): Promise<string[]> {
  const MARK = '@@nfv@@';
  const listed = await inWorkers(cases, 8, async (slice) => {
    const script = `for f do nft -j -f "$f" && nft list ruleset; echo ${MARK}; done`;
    // No limit of its own (tap's per file is the bound): on a loaded machine a namespace's 70-odd processes took
    // over runProcess's default minute, and its cut output shifted every later listing onto the wrong file.
    const files = slice.map((c) => c.file);
    const r = await runProcess(t, 'unshare', [...NAMESPACES, 'sh', '-c', script, 'sh', ...files], '', 600_000);
    const listings = r.stdout.split(`${MARK}\n`);
    return slice.map((_, i) => (i < listings.length - 1 ? listings[i]! : `not listed (${r.code}): ${r.stderr}`));
  });
  return listed.flat();
}

t.test('loaded, a list is listed exactly as written, from text and from JSON', { skip: skipNft }, async (t) => {
  const dir = await scratch(t);
  const g = generator(977);
  const text: Case[] = [];
  const json: Case[] = [];
  for (let k = 0; k < 150; k++) {
    const node = g.firewall(30);
    for (const sets of [false, true]) {
      const options = { sets, stateless: k % 2 === 1 };
      const written = nftables(node, k, options);
      const name = path.join(dir, `${k}${sets ? '.sets' : ''}`);
      await writeFile(`${name}.nft`, written);
      await writeFile(`${name}.json`, nftablesJson(node, k, options));
      text.push({ file: `${name}.nft`, sets, expected: body(written) });
      json.push({ file: `${name}.json`, sets, expected: body(written) });
    }
  }
  const cases = [...text, ...json];
  const listed = [...(await listedText(t, text)), ...(await listedJson(t, json))];
  const differ = listed.flatMap((out, k) => {
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
