/**
 * The house rules of docs/ARCHITECTURE.md, checked on the source itself: no import circles in src/, and each layer
 * imports only the layers before it (model, store, then engine, deploy and inventory, then ops, then cli and http).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ROOT } from './helpers.js';

const SRC = path.join(ROOT, 'src');
const files = (readdirSync(SRC, { recursive: true }) as string[])
  .filter((f) => f.endsWith('.ts'))
  .map((f) => f.split(path.sep).join('/'));

/** Each file's imports of other src files (static and dynamic, type-only included: a circle of types is one too). */
const imports = new Map<string, string[]>(
  files.map((f) => {
    const text = readFileSync(path.join(SRC, f), 'utf8');
    const targets = [...text.matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']+)\.js'/g)].map((m) =>
      path.posix.normalize(path.posix.join(path.posix.dirname(f), `${m[1]}.ts`)),
    );
    return [f, targets.filter((x) => files.includes(x))];
  }),
);

t.test('no import circles in src/', async (t) => {
  const state = new Map<string, 'open' | 'done'>();
  const circles: string[] = [];
  const visit = (f: string, trail: string[]) => {
    if (state.get(f) === 'done') return;
    if (state.get(f) === 'open') return void circles.push([...trail.slice(trail.indexOf(f)), f].join(' -> '));
    state.set(f, 'open');
    for (const g of imports.get(f)!) visit(g, [...trail, f]);
    state.set(f, 'done');
  };
  for (const f of files) visit(f, []);
  t.same(circles, [], 'every import path ends');
  t.ok(files.length > 100, `${files.length} files read`);
});

const LAYER: Record<string, number> = {
  model: 0,
  store: 1,
  engine: 2,
  deploy: 2,
  inventory: 2,
  ops: 3,
  cli: 4,
  http: 4,
};

t.test('each layer imports only the layers before it (the benches aside)', async (t) => {
  const upward: string[] = [];
  const top = (f: string) => f.split('/')[0]!;
  for (const [f, targets] of imports) {
    const from = LAYER[top(f)];
    if (from === undefined) continue;
    for (const g of targets) {
      const to = LAYER[top(g)];
      // Within a layer a folder imports itself; the domain layers not each other; `nfv serve` starts the listener.
      const allowed =
        to !== undefined &&
        (to < from || top(f) === top(g) || (top(f) === 'cli' && top(g) === 'http') || (to === from && from < 2));
      if (!allowed) upward.push(`${f} -> ${g}`);
    }
  }
  t.same(upward, [], 'no import goes up, nor across the domain layers');
});

/** Each file's static imports of values (`import type` and `import()` aside): what loading the file loads with it. */
const loads = new Map<string, string[]>(
  files.map((f) => {
    const text = readFileSync(path.join(SRC, f), 'utf8');
    const statements = text.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^;']*?from\s*)?'(\.{1,2}\/[^']+)\.js'/gm);
    const targets = [...statements]
      .filter((m) => !m[1])
      .map((m) => path.posix.normalize(path.posix.join(path.posix.dirname(f), `${m[2]}.ts`)));
    return [f, targets.filter((x) => files.includes(x))];
  }),
);

function loaded(f: string, seen = new Set<string>()): Set<string> {
  if (seen.has(f)) return seen;
  seen.add(f);
  for (const g of loads.get(f)!) loaded(g, seen);
  return seen;
}

t.test("a command loads its own operations, not the operation table's every handler", async (t) => {
  const commands = files.filter((f) => f.startsWith('cli/commands/'));
  t.ok(commands.length > 10, `${commands.length} command modules`);
  for (const f of ['cli/main.ts', ...commands]) t.notOk(loaded(f).has('ops/table.ts'), `${f} loads no ops/table.ts`);
  // A simulation's main thread: the simulations' operations, what they draw and look up with, running and rendering.
  const own = ['operation', 'render', 'network/simulations', 'network/draw', 'network/lookups'].map(
    (m) => `ops/${m}.ts`,
  );
  const others = [...loaded('cli/commands/simulate.ts')].filter((f) => f.startsWith('ops/') && !own.includes(f));
  t.same(others, [], 'simulate loads no other operations');
});
