/**
 * The README's tour runs end to end on a fresh workspace: every command of README.md's fenced ```sh blocks, in the
 * order written, in one bash (so `export` and `cd` carry on to the next command, as in a reader's shell), started in
 * the checkout with HOME a fresh folder (the tour's `~/nfv-demo`), no workspace or database in the environment, and
 * `set -o pipefail`, stdin empty. Each command must exit 0 unless a trailing comment says otherwise:
 *
 *   nfv firewall lint samples/router.rules   # exit 1: a redundant rule     (expects exit code 1)
 *   nfv serve --port 8085                    # not run: serves until Ctrl-C (left out, with the reason after it)
 *
 * `# not run: REASON` is for what a test cannot do: install (`npm ...`), serve, reach a database or a server. The
 * list stays short (MOST_NOT_RUN), so the README keeps showing what runs. A line ending in `\` continues on the next.
 * A command that needs a program missing here (Graphviz's dot for `draw -o FILE.svg`) is skipped and says so.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { ROOT, scratch } from './helpers.js';

/** At most this many commands of the README may be marked `# not run:`. */
const MOST_NOT_RUN = 10;

interface Command {
  /** The command as written (continuation lines joined). */
  text: string;
  /** Its exit code: 0 unless a comment says `# exit N`. */
  exit: number;
  /** Why it is not run, if it is not. */
  notRun?: string;
}

/** The commands of the ```sh blocks of a Markdown text, in order. */
function commandsOf(markdown: string): Command[] {
  const out: Command[] = [];
  let inBlock = false;
  let pending = '';
  for (const line of markdown.split('\n')) {
    if (!inBlock) {
      if (/^```sh\s*$/.test(line)) inBlock = true;
      continue;
    }
    if (/^```\s*$/.test(line)) {
      inBlock = false;
      continue;
    }
    if (line.endsWith('\\')) {
      pending += line + '\n';
      continue;
    }
    const text = pending + line;
    pending = '';
    if (/^\s*(#.*)?$/.test(text)) continue; // a blank or comment line
    const notRun = /\s#\s*not run:\s*(.*)$/.exec(text)?.[1];
    const exit = Number(/\s#\s*exit (\d+)\b/.exec(text)?.[1] ?? 0);
    out.push({ text, exit, ...(notRun !== undefined ? { notRun } : {}) });
  }
  return out;
}

const has = (program: string) => spawnSync('sh', ['-c', `command -v ${program}`]).status === 0;

/** Programs a command needs beyond nfv and the shell, found from what it asks for. */
function missingFor(command: string): string | undefined {
  if (/\bdraw\b.*-o\s+\S+\.(svg|png|pdf)\b/.test(command) && !has('dot'))
    return 'Graphviz is not installed here (apt-get install graphviz)';
  return undefined;
}

const commands = commandsOf(readFileSync(path.join(ROOT, 'README.md'), 'utf8'));

t.test('the convention holds: few commands not run, each saying why', async (t) => {
  const notRun = commands.filter((c) => c.notRun !== undefined);
  t.ok(commands.length - notRun.length >= 20, `${commands.length - notRun.length} commands run`);
  t.ok(notRun.length <= MOST_NOT_RUN, `${notRun.length} not run (at most ${MOST_NOT_RUN})`);
  for (const c of notRun) t.ok(c.notRun!.trim().length > 0, `a reason: ${c.text}`);
  t.ok(
    commands.some((c) => /^npm ci && \.\/bin\/nfv simulate samples\/office-nat\.xml/.test(c.text)),
    'the install command that runs the main job on a shipped sample',
  );
  t.ok(
    commands.some((c) => /^npm test\b/.test(c.text)),
    'the command that runs the tests',
  );
  t.same(commandsOf('```sh\na \\\n  b   # exit 2: why\n# only a comment\nc # not run: needs x\n```\n```js\nd\n```\n'), [
    { text: 'a \\\n  b   # exit 2: why', exit: 2 },
    { text: 'c # not run: needs x', exit: 0, notRun: 'needs x' },
  ]);
});

t.test('the tour runs end to end on a fresh workspace', async (t) => {
  const home = await scratch(t);
  const out = await scratch(t);
  const run = commands
    .map((c, i) => ({ ...c, i, missing: c.notRun === undefined ? missingFor(c.text) : undefined }))
    .filter((c) => c.notRun === undefined);
  // One bash for all: each command in braces (the current shell, so cd and export persist), its output kept
  // apart, its exit code appended to a file. The newline before `}` ends a trailing comment. The first command
  // that exits otherwise than written stops the tour: what follows depends on it, and a failed `cd` would leave
  // the rest writing into the checkout.
  const script = [
    'set -o pipefail',
    'exec </dev/null',
    `cd ${JSON.stringify(ROOT)}`,
    ...run.map(({ text, i, exit, missing }) =>
      missing
        ? `echo "${i} skipped" >> "$NFV_README_OUT/codes"`
        : `{ ${text}\n} > "$NFV_README_OUT/${i}.out" 2> "$NFV_README_OUT/${i}.err"; code=$?\n` +
          `echo "${i} $code" >> "$NFV_README_OUT/codes"; [ "$code" -eq ${exit} ] || exit 0`,
    ),
  ].join('\n');
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) =>
        !['NFV_WORKSPACE', 'NFV_DATABASE_URL', 'NFV_TOKEN', 'NODE_OPTIONS'].includes(k) && !k.startsWith('_TAPJS_'),
    ),
  );
  const env = {
    ...inherited,
    HOME: home,
    NO_COLOR: '1',
    NFV_README_OUT: out,
    // bin/nfv's #! line finds node on PATH: the node running the tests.
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
  };
  const shell = await runBash(t, script, env);
  t.equal(shell.code, 0, `bash ran the tour: ${shell.stderr}`);
  const codes = new Map(
    (await readFile(path.join(out, 'codes'), 'utf8').catch(() => ''))
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' ') as [string, string]),
  );
  for (const { text, i, exit, missing } of run) {
    if (missing) {
      t.skip(`${text}: ${missing}`);
      continue;
    }
    const code = codes.get(String(i));
    if (code === undefined) {
      t.fail(`${text}: not reached (a command before it failed)`);
      continue;
    }
    const said = await readFile(path.join(out, `${i}.err`), 'utf8').catch(() => '');
    t.equal(Number(code), exit, `${text}\n${said.slice(-600)}`);
  }
});

/**
 * bash running `script` with `env`, killed after 900 s, a net for a hang (`.taprc` gives a file 1,800 s), or when the
 * test ends: at 100 s the tour was cut at its 24th command at load 17 (the file took 81 s in a whole run at load
 * 14-18).
 */
function runBash(
  t: { teardown: (fn: () => unknown) => void },
  script: string,
  env: Record<string, string | undefined>,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    // As helpers.ts starts bin/nfv: tap's hook adds its TypeScript loader to every child's NODE_OPTIONS, which
    // env -u drops at exec, so that the nfv processes bash starts run as a reader's would; setpriv ends bash with
    // the test process.
    const argv = [
      ...(existsSync('/usr/bin/setpriv') ? ['/usr/bin/setpriv', '--pdeathsig', 'KILL'] : []),
      '/usr/bin/env',
      '-u',
      'NODE_OPTIONS',
      'bash',
      '-c',
      script,
    ];
    const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'ignore', 'pipe'] });
    const stop = () => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL');
    const timer = setTimeout(stop, 900_000);
    t.teardown(stop);
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}
