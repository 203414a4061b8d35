/**
 * The documentation's links: every relative link of README.md and docs/*.md names a file or folder of the checkout,
 * and every #anchor names a heading of its page as GitHub slugs it (lower case, punctuation dropped, spaces as
 * hyphens, -1, -2, ... for repeats). Links inside code blocks and code spans are not links. docs/README.md, the
 * index, links every page of docs/.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ROOT } from './helpers.js';

const PAGES = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

/** The lines of a page outside its fenced code blocks (a line inside one is blank). */
function outsideFences(markdown: string): string[] {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const opens = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence !== undefined) {
      if (opens && opens[1]!.startsWith(fence)) fence = undefined;
      lines.push('');
    } else if (opens) {
      fence = opens[1]!;
      lines.push('');
    } else lines.push(line);
  }
  return lines;
}

/** The text of a page without its code blocks and code spans (their brackets are not links). */
const prose = (markdown: string) =>
  outsideFences(markdown)
    .map((line) => line.replace(/(`+)[^`]*?\1/g, ''))
    .join('\n');

/** GitHub's anchor for a heading's text (github-slugger): what the heading shows, lower case, punctuation dropped. */
function slug(heading: string): string {
  const shown = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link shows its text
    .replace(/<[^>]+>/g, '') // tags show nothing
    .replace(/`/g, ''); // a code span shows its content
  return shown
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a page: one per heading (outside code blocks), repeats numbered as GitHub numbers them. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of outsideFences(markdown)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The link targets of a page: inline links and images `[text](target "title")`, and reference definitions. */
function targets(markdown: string): string[] {
  const text = prose(markdown);
  const out: string[] = [];
  for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push(m[1]!);
  for (const m of text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)) out.push(m[1]!);
  return out;
}

const read = (page: string) => readFileSync(path.join(ROOT, page), 'utf8');

t.test('the pages are there: the README and the index of docs/', async (t) => {
  t.ok(PAGES.includes('docs/README.md'), 'docs/README.md');
  t.ok(PAGES.length > 3, `${PAGES.length} pages`);
});

t.test('the slug rules give the anchors GitHub gives', async (t) => {
  t.equal(slug('Exit codes'), 'exit-codes');
  t.equal(
    slug('HTTPS (`nfv serve --tls-cert FILE --tls-key FILE [--tls-ca FILE]`)'),
    'https-nfv-serve---tls-cert-file---tls-key-file---tls-ca-file',
  );
  t.equal(slug('Fabrics: `npm run bench:fabric`'), 'fabrics-npm-run-benchfabric');
  t.equal(
    slug('Analyses of a rule list: `nfv firewall lint | allows | diff`'),
    'analyses-of-a-rule-list-nfv-firewall-lint--allows--diff',
  );
  t.equal(slug('Where nfv differs from PuppetDB on purpose'), 'where-nfv-differs-from-puppetdb-on-purpose');
  t.equal(
    slug('Placement on substrate hosts (`src/engine/placement`, issue 22)'),
    'placement-on-substrate-hosts-srcengineplacement-issue-22',
  );
  t.same([...anchors('# A\n## B\n```sh\n# not a heading\n```\n## B\n')], ['a', 'b', 'b-1']);
});

for (const page of PAGES) {
  t.test(`${page}: every relative link and anchor resolves`, async (t) => {
    const links = targets(read(page)).filter((target) => !/^[a-z][a-z0-9+.-]*:|^\/\//i.test(target));
    for (const link of links) {
      const hash = link.indexOf('#');
      const file = decodeURIComponent(hash < 0 ? link : link.slice(0, hash));
      const anchor = hash < 0 ? undefined : decodeURIComponent(link.slice(hash + 1));
      const resolved = file === '' ? path.join(ROOT, page) : path.resolve(path.dirname(path.join(ROOT, page)), file);
      if (!resolved.startsWith(ROOT + path.sep)) {
        t.fail(`${link}: outside the checkout`);
        continue;
      }
      if (!existsSync(resolved)) {
        t.fail(`${link}: no ${path.relative(ROOT, resolved)}`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith('.md')) {
        const known = anchors(readFileSync(resolved, 'utf8'));
        t.ok(known.has(anchor), `${link}: ${path.relative(ROOT, resolved)} has a heading #${anchor}`);
      } else t.pass(link);
    }
  });
}

t.test('docs/README.md links every page of docs/', async (t) => {
  const linked = new Set(
    targets(read('docs/README.md'))
      .map((target) => target.split('#')[0]!)
      .filter(Boolean),
  );
  for (const page of PAGES.filter((p) => p.startsWith('docs/') && p !== 'docs/README.md'))
    t.ok(linked.has(path.basename(page)), `${page} is in the index`);
});
