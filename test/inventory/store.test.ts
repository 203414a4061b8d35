/**
 * The journal store of the inventory on real files: replay, torn tails and how they are said, damage at the end and
 * inside, compaction, migration, two writers.
 */
import { spawnSync } from 'node:child_process';
import { appendFile, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { JournalInventoryStore } from '../../src/inventory/store.js';
import { Workspace } from '../../src/store/workspace.js';
import { BIN, scratch } from '../helpers.js';
import { catalog, changed, report, user, web } from './data.js';
// Topics sharing this process: `.part.ts` files (docs/development.md, "Tests").
import './ingest.part.js';

const cmd = (command: string, version: number, payload: unknown) => ({ command, version, payload });
const catalogAt = (certname: string, at: string, resources = [web, user]) =>
  cmd('replace catalog', 9, catalog(certname, at, resources));
const resourcesOf = async (store: JournalInventoryStore, certname: string) =>
  (await store.data()).catalogs[certname]?.resources.length;

t.test('commands are durable lines; a new reader replays the same state and the same staleness rules', async (t) => {
  const ws = new Workspace(await scratch(t));
  const store = new JournalInventoryStore(ws);
  const results = await store.apply(
    [
      catalogAt('a.example', '2025-01-02T00:00:00Z'),
      catalogAt('a.example', '2025-01-01T00:00:00Z'),
      cmd('store report', 8, report('a.example', '2025-01-02T10:00:00Z', [changed('nginx')])),
      cmd('deactivate node', 3, { certname: 'b.example', producer_timestamp: '2025-01-01T00:00:00Z' }),
      { command: 'replace catalog', version: 9, payload: { certname: 'x' } },
    ],
    Date.now(),
  );
  t.same(
    results.map((r) => ('ok' in r ? r.ok.applied : r.error.status)),
    [true, false, true, true, 400],
    'a stale catalog is ignored, a bad one refused alone',
  );
  const fresh = new JournalInventoryStore(ws);
  const data = await fresh.data();
  t.equal(data.catalogs['a.example']!.producer_timestamp, Date.parse('2025-01-02T00:00:00Z'));
  t.equal(data.reports.length, 1);
  t.equal(data.nodes['b.example']!.deactivated, Date.parse('2025-01-01T00:00:00Z'));
  const again = await fresh.apply(
    [cmd('store report', 8, report('a.example', '2025-01-02T10:00:00Z', [changed('nginx')]))],
    Date.now(),
  );
  t.same('ok' in again[0]! && again[0].ok.applied, false, 'the duplicate report is known to the new reader');
});

t.test('a torn last line (a writer killed mid-append) is skipped by readers and cut by the next writer', async (t) => {
  const dir = await scratch(t);
  const ws = new Workspace(dir);
  await new JournalInventoryStore(ws).apply([catalogAt('a.example', '2025-01-01T00:00:00Z')], Date.now());
  const file = path.join(dir, 'inventory.journal');
  const whole = (await stat(file)).size;
  await appendFile(file, '{"k":"c","n":"b.example","t":1,"b":999}\t{"producer_timest');
  t.equal(await resourcesOf(new JournalInventoryStore(ws), 'a.example'), 2, 'the torn line is not read');
  t.equal(await resourcesOf(new JournalInventoryStore(ws), 'b.example'), undefined);
  await new JournalInventoryStore(ws).apply([catalogAt('c.example', '2025-01-01T00:00:00Z', [web])], Date.now());
  const text = await readFile(file, 'utf8');
  t.notMatch(text, /producer_timest$/m, 'cut before the next line was written');
  t.ok((await stat(file)).size > whole);
  t.equal(await resourcesOf(new JournalInventoryStore(ws), 'c.example'), 1);
});

t.test('a damaged line inside the journal is refused by name and left untouched', async (t) => {
  const dir = await scratch(t);
  const ws = new Workspace(dir);
  const file = path.join(dir, 'inventory.journal');
  await new JournalInventoryStore(ws).apply([catalogAt('a.example', '2025-01-01T00:00:00Z')], Date.now());
  const text = (await readFile(file, 'utf8')).replace('"b":', '"b":1');
  await writeFile(file, `${text}${text}`);
  await t.rejects(new JournalInventoryStore(ws).data(), {
    status: 409,
    message: new RegExp(`the journal ${file} is damaged`),
  });
  await t.rejects(new JournalInventoryStore(ws).apply([catalogAt('b.example', '2025-01-01T00:00:00Z')], Date.now()), {
    status: 409,
  });
  t.equal(await readFile(file, 'utf8'), `${text}${text}`);
});

t.test('the end of the journal is judged alike by readers and writers', async (t) => {
  const cases = [
    ['a last line with a newline, shorter than its header says', '{"k":"c","n":"x","t":1,"b":500}\t{"certname":"x"}\n'],
    ['a last line with a newline, longer than its header says', '{"k":"c","n":"x","t":1,"b":2}\t{"certname":"x"}\n'],
    ['a tail without a newline, longer than its header says', '{"k":"c","n":"x","t":1,"b":2}\t{"certname":"x"}'],
    ['a header that is JSON without a length', '5\t{"certname":"x"}\n'],
    ['a tail whose header is not JSON', '{"k":"c",\t{"certname":"x"}'],
  ];
  for (const [what, end] of cases) {
    const dir = await scratch(t);
    const ws = new Workspace(dir);
    const file = path.join(dir, 'inventory.journal');
    await new JournalInventoryStore(ws).apply([catalogAt('a.example', '2025-01-01T00:00:00Z')], Date.now());
    const at = (await stat(file)).size;
    await appendFile(file, end!);
    const before = await readFile(file);
    const refused = { status: 409, message: new RegExp(`the (line|header) at byte ${at} `) };
    await t.rejects(new JournalInventoryStore(ws).data(), refused, `${what}: a read refuses it`);
    await t.rejects(
      new JournalInventoryStore(ws).apply([catalogAt('b.example', '2025-01-01T00:00:00Z')], Date.now()),
      refused,
      `${what}: so does the next write`,
    );
    t.same(await readFile(file), before, `${what}: the journal is untouched`);
  }
});

t.test('a torn tail is said once per store, and not while a writer holds the lock', async (t) => {
  const dir = await scratch(t);
  const said: string[] = [];
  const ws = new Workspace(dir, { warn: (m) => said.push(m) });
  const file = path.join(dir, 'inventory.journal');
  await new JournalInventoryStore(ws).apply([catalogAt('a.example', '2025-01-01T00:00:00Z')], Date.now());
  await appendFile(file, '{"k":"c","n":"b.example","t":1,"b":999}\t{"producer_timest');
  const reader = new JournalInventoryStore(ws);
  // A writer at work: what follows the last newline may be its line under way.
  await ws.exclusive(file, async () => {
    await reader.data();
  });
  t.same(said, [], 'nothing said while the lock is held');
  await reader.data();
  await reader.data();
  t.equal(said.length, 1, 'said once over two reads');
  t.match(said[0], /ends in a torn write of 57 bytes \(from byte \d+;/);
  const writer = new JournalInventoryStore(ws);
  await writer.apply([catalogAt('c.example', '2025-01-01T00:00:00Z', [web])], Date.now());
  t.equal(said.length, 2, 'a new store says it once too, before it cuts it');
  await reader.data();
  t.equal(said.length, 2, 'nothing is left to say');
  t.equal(await resourcesOf(reader, 'c.example'), 1);
});

t.test('superseded catalogs are compacted away; the data stays the same', async (t) => {
  const dir = await scratch(t);
  const ws = new Workspace(dir);
  const store = new JournalInventoryStore(ws, { compactMinBytes: 1 });
  for (let day = 1; day <= 6; day++)
    await store.apply([cmd('store report', 8, report('b.example', `2025-01-0${day}T10:00:00Z`, []))], Date.now());
  // Once the superseded catalogs weigh as much as the live lines, the journal is rewritten without them.
  for (let day = 1; day <= 9; day++)
    await store.apply([catalogAt('a.example', `2025-01-0${day}T00:00:00Z`)], Date.now());
  const lines = (await readFile(path.join(dir, 'inventory.journal'), 'utf8')).trim().split('\n');
  const catalogLines = lines.filter((l) => l.startsWith('{"k":"c"')).length;
  t.ok(catalogLines < 9 && catalogLines >= 1, `${catalogLines} of 9 catalog lines left`);
  t.equal(lines.filter((l) => l.startsWith('{"k":"r"')).length, 6, 'every report kept');
  const data = await new JournalInventoryStore(ws).data();
  t.equal(data.catalogs['a.example']!.producer_timestamp, Date.parse('2025-01-09T00:00:00Z'));
  t.equal(data.reports.length, 6);
  t.same(
    (await readdir(dir)).filter((f) => f.endsWith('.tmp')),
    [],
  );
});

t.test('an inventory.json of nfv 0.1 is moved into the journal once', async (t) => {
  const dir = await scratch(t);
  const old = {
    nodes: {
      'a.example': { deactivated: null, lastSeen: 1735689600000 },
      'gone.example': { deactivated: 1735689600000, lastSeen: null },
    },
    catalogs: {
      'a.example': {
        producer_timestamp: 1735689600000,
        environment: 'DEV',
        version: '1',
        resources: [
          {
            certname: 'a.example',
            resource: 'x',
            type: 'Service',
            title: 'nginx',
            exported: false,
            tags: [],
            file: null,
            line: null,
            environment: 'DEV',
            parameters: {},
          },
        ],
      },
    },
    reports: [],
  };
  await writeFile(path.join(dir, 'inventory.json'), JSON.stringify(old));
  const data = await new JournalInventoryStore(new Workspace(dir)).data();
  t.equal(data.catalogs['a.example']!.resources.length, 1);
  t.equal(data.nodes['gone.example']!.deactivated, 1735689600000);
  t.same((await readdir(dir)).sort(), ['inventory.journal', 'inventory.json.migrated']);
});

t.test('a serving store and CLI writers side by side: each sees the other, nothing applies twice', async (t) => {
  const dir = await scratch(t);
  const ws = new Workspace(dir);
  const serving = new JournalInventoryStore(ws);
  await serving.apply([catalogAt('a.example', '2025-01-01T00:00:00Z')], Date.now());
  const file = path.join(dir, 'c.json');
  for (let k = 1; k <= 3; k++) {
    await writeFile(file, JSON.stringify(catalog(`cli-${k}.example`, '2025-01-01T00:00:00Z', [web])));
    const r = spawnSync(
      '/usr/bin/env',
      ['-u', 'NODE_OPTIONS', BIN, 'inventory', 'ingest', 'catalog', file, '--workspace', dir],
      { encoding: 'utf8' },
    );
    t.equal(r.status, 0, r.stderr);
    const mine = await serving.apply([catalogAt('a.example', `2025-01-0${k + 1}T00:00:00Z`)], Date.now());
    t.same('ok' in mine[0]! && mine[0].ok.applied, true);
  }
  const data = await serving.data();
  t.same(Object.keys(data.catalogs).sort(), ['a.example', 'cli-1.example', 'cli-2.example', 'cli-3.example']);
  t.same(
    Object.keys((await new JournalInventoryStore(ws).data()).catalogs).sort(),
    Object.keys(data.catalogs).sort(),
    'a new reader agrees',
  );
});

t.test('batch ingest: JSON Lines files and folders; a bad line is refused alone', async (t) => {
  const dir = await scratch(t);
  const input = await scratch(t);
  const jsonl = (cmds: unknown[]) => cmds.map((c) => JSON.stringify(c)).join('\n');
  await writeFile(
    path.join(input, '1-catalogs.jsonl'),
    jsonl([catalogAt('a.example', '2025-01-01T00:00:00Z'), catalogAt('b.example', '2025-01-01T00:00:00Z')]),
  );
  await writeFile(
    path.join(input, '2-reports.jsonl'),
    `${jsonl([cmd('store report', 8, report('a.example', '2025-01-02T10:00:00Z', [changed('nginx')]))])}\nnot json\n`,
  );
  const r = spawnSync(
    '/usr/bin/env',
    ['-u', 'NODE_OPTIONS', BIN, 'inventory', 'ingest', 'commands', input, '--workspace', dir],
    { encoding: 'utf8' },
  );
  t.equal(r.status, 2, 'a refused line makes the exit 2');
  const summary = JSON.parse(r.stdout);
  t.match(summary, { commands: 4, applied: 3, ignored: 0, refused: 1 });
  t.match(summary.refusals[0].where, /2-reports\.jsonl:2$/);
  t.match(r.stderr, /2-reports\.jsonl:2: not JSON/);
  const data = await new JournalInventoryStore(new Workspace(dir)).data();
  t.equal(data.reports.length, 1);
  t.equal(Object.keys(data.catalogs).length, 2);
});

t.test(
  'a fresh writer starts from the checkpoint and reads only the lines after it; queries read everything',
  async (t) => {
    const dir = await scratch(t);
    const ws = new Workspace(dir);
    const writer = new JournalInventoryStore(ws, { checkpointEvery: 1 });
    await writer.apply(
      [
        catalogAt('a.example', '2025-01-01T00:00:00Z'),
        cmd('store report', 8, report('a.example', '2025-01-02T10:00:00Z', [changed('nginx')])),
      ],
      Date.now(),
    );
    const checkpoint = JSON.parse(await readFile(path.join(dir, 'inventory.checkpoint.json'), 'utf8'));
    t.equal(
      checkpoint.end,
      (await stat(path.join(dir, 'inventory.journal'))).size,
      'the checkpoint describes the whole journal',
    );
    t.equal(checkpoint.hashes.length, 1);
    // Lines after the checkpoint, written by a writer that makes no checkpoint.
    await new JournalInventoryStore(ws, { checkpointEvery: 1e12 }).apply(
      [cmd('deactivate node', 3, { certname: 'a.example', producer_timestamp: '2025-02-01T00:00:00Z' })],
      Date.now(),
    );
    const fresh = new JournalInventoryStore(ws, { checkpointEvery: 1e12 });
    const again = await fresh.apply(
      [
        cmd('store report', 8, report('a.example', '2025-01-02T10:00:00Z', [changed('nginx')])),
        catalogAt('a.example', '2024-12-01T00:00:00Z'),
      ],
      Date.now(),
    );
    t.same(
      again.map((r) => 'ok' in r && r.ok.applied),
      [false, false],
      'the known report and the stale catalog, decided from the checkpoint',
    );
    const data = await fresh.data();
    t.equal(
      data.nodes['a.example']!.deactivated,
      Date.parse('2025-02-01T00:00:00Z'),
      'the line after the checkpoint counted',
    );
    t.equal(data.catalogs['a.example']!.resources.length, 2, 'a query reads the payloads');
    await writeFile(path.join(dir, 'inventory.checkpoint.json'), '{"id": "nonsense"');
    t.equal(
      'ok' in
        (await new JournalInventoryStore(ws).apply([catalogAt('b.example', '2025-01-01T00:00:00Z')], Date.now()))[0]!,
      true,
      'a damaged checkpoint is ignored',
    );
  },
);

const factsAt = (certname: string, at: string, values: object) =>
  cmd('replace facts', 5, { certname, environment: 'e', producer: 'p', producer_timestamp: at, values });

t.test('superseded facts are compacted away; a checkpoint keeps their staleness', async (t) => {
  const dir = await scratch(t);
  const ws = new Workspace(dir);
  const store = new JournalInventoryStore(ws, { compactMinBytes: 1, checkpointEvery: 1 });
  for (let day = 1; day <= 9; day++)
    await store.apply([factsAt('a.example', `2025-01-0${day}T00:00:00Z`, { day })], Date.now());
  const lines = (await readFile(path.join(dir, 'inventory.journal'), 'utf8')).trim().split('\n');
  const factLines = lines.filter((l) => l.startsWith('{"k":"f"')).length;
  t.ok(factLines < 9 && factLines >= 1, `${factLines} of 9 facts lines left`);
  t.same((await new JournalInventoryStore(ws).data()).factsets['a.example']!.values, { day: 9 });
  // A fresh writer decides from the checkpoint: older facts are stale, newer ones apply.
  const fresh = new JournalInventoryStore(ws, { checkpointEvery: 1e12 });
  const results = await fresh.apply(
    [factsAt('a.example', '2025-01-05T00:00:00Z', { day: 5 }), factsAt('a.example', '2025-02-01T00:00:00Z', {})],
    Date.now(),
  );
  t.same(
    results.map((r) => 'ok' in r && r.ok.applied),
    [false, true],
  );
  t.same((await new JournalInventoryStore(ws).data()).factsets['a.example']!.values, {});
});
