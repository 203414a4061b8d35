/**
 * nftables output loaded into the kernel, in user and network namespaces (`unshare -rn`), and listed back: exactly as
 * nfv wrote it, from text and from JSON, for 150 seeded random rule lists with and without --sets (stateful and
 * --stateless in turn). Run in nftables.test.ts's process (nft -c on 1,000 lists). Without nft or unshare the test is
 * skipped, saying why.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { nftables, nftablesJson } from '../../src/deploy/nftables.js';
import { scratch } from '../helpers.js';
import { body, generator, inWorkers, libnft, skipLibnft, sortedSets, unshared } from './nft-harness.js';

interface Case {
  file: string;
  sets: boolean;
  expected: string;
}

/** The listings of `cases` (text files), each loaded then listed by one `nft -i` per namespace. */
async function listedText(t: Tap.Test, cases: Case[]): Promise<string[]> {
  const listed = await inWorkers(cases, 2, async (slice) => {
    // One process, one transaction per line (as `nft -f` per file, at a tenth of the processes' wall time when
    // the machine is loaded); each listing starts at its one table, which splits them apart.
    const input = slice.map((c) => `include "${c.file}"\nlist ruleset\n`).join('');
    const r = await unshared(t, ['nft', '-i'], input);
    const listings = r.stdout.split(/(?=^table ip nfv \{$)/m);
    // A load refused or a listing without the table: the count is off, and the listings are all reported.
    return listings.length === slice.length ? listings : slice.map(() => r.stdout + r.stderr);
  });
  return listed.flat();
}

/**
 * The listings of `cases` (JSON files): `nft -j -f` then `nft list ruleset`, per file, through libnftables
 * (libnft.py): nft's own two processes per file were most of this file's CPU.
 */
async function listedJson(t: Tap.Test, cases: Case[]): Promise<string[]> {
  const listed = await inWorkers(cases, 2, async (slice) => {
    const done = await libnft(
      t,
      slice.map((c) => [
        ['nft', '-j', '-f', c.file],
        ['nft', 'list', 'ruleset'],
      ]),
    );
    return done.map((d) => (d.code === 0 ? d.stdout : `not listed (${d.code}): ${d.stderr}`));
  });
  return listed.flat();
}

t.test('loaded, a list is listed exactly as written, from text and from JSON', { skip: skipLibnft }, async (t) => {
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
