/**
 * nfv in a real terminal (tmux): the simulate summary, the spinner, Ctrl-C, a table and a prompt, as a person sees
 * them. Skipped, saying so, where tmux is not installed (CI installs it).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { BIN, PYTHON, ROOT, scratch } from '../helpers.js';

const HAVE_TMUX = spawnSync('sh', ['-c', 'command -v tmux']).status === 0;
const SAMPLE = path.join(ROOT, 'samples', 'office-nat.xml');
const GRAPHS = path.join(ROOT, 'test', 'fixtures', 'graphs.json');

/**
 * A tmux server of its own with one 160x50 pane running a shell; `run` types a command line. The shell is a person's:
 * without CI, which CI runners set and which turns the spinner and the prompts off (as it should for them).
 */
function terminal(t: Tap.Test, env: Record<string, string>) {
  // A socket path of our own, removed after the server: tmux's kill-server leaves its socket file (-L's, in
  // /tmp/tmux-UID, three per run before).
  const socket = path.join(os.tmpdir(), `nfv-test-tmux-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
  const tmux = (...args: string[]) => execFileSync('tmux', ['-S', socket, ...args], { encoding: 'utf8' });
  const exports = Object.entries({ NO_COLOR: '1', ...env })
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  tmux('new-session', '-d', '-x', '160', '-y', '50', `env -u NODE_OPTIONS -u CI ${exports} PS1='$ ' sh`);
  t.teardown(() => {
    spawnSync('tmux', ['-S', socket, 'kill-server']);
    rmSync(socket, { force: true });
  });
  const screen = () => tmux('capture-pane', '-p', '-J');
  return {
    screen,
    type: (line: string) => tmux('send-keys', '-l', line),
    keys: (...keys: string[]) => tmux('send-keys', ...keys),
    run: (line: string) => tmux('send-keys', '-l', `${line}\n`),
    /** Waits until the screen matches, or fails after `ms`. */
    async until(pattern: RegExp, ms = 20_000): Promise<string> {
      const deadline = Date.now() + ms;
      for (;;) {
        const text = screen();
        if (pattern.test(text)) return text;
        if (Date.now() > deadline) throw new Error(`the terminal never showed ${pattern}:\n${text}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

t.test('in a real terminal', { skip: !HAVE_TMUX && 'tmux is not installed here (apt-get install tmux)' }, async (t) => {
  t.test('simulate prints the summary for a person, not the document', async (t) => {
    const term = terminal(t, { NFV_WORKSPACE: await scratch(t) });
    term.run(`${BIN} simulate ${SAMPLE}; echo EXIT=$?`);
    const text = await term.until(/EXIT=\d+/);
    t.match(text, /SAT: 3\/3 requirements hold; 1 firewall \(1 placed\); 1 rule/);
    t.match(text, /firewall 10\.255\.0\.1 \(graph 0, placed here\): default DENY, 1 rule/);
    t.match(text, /┌───┬────────┬/);
    t.notMatch(text, /<NFV>/);
    t.match(text, /EXIT=0/);
  });

  t.test(
    'the spinner counts seconds while the solver works; Ctrl-C stops it within a second, exit 130, nothing stored',
    async (t) => {
      const ws = await scratch(t);
      const term = terminal(t, { NFV_WORKSPACE: ws, NFV_SOLVER_FAULT: 'delay:30000' });
      term.run(`${BIN} simulate --store ${SAMPLE}; echo EXIT=$?`);
      await term.until(/\(1\.\d s\)/);
      t.pass('the spinner shows the elapsed time');
      const sent = Date.now();
      term.keys('C-c');
      const text = await term.until(/EXIT=\d+/, 5000);
      t.ok(Date.now() - sent < 1500, `ended ${Date.now() - sent} ms after Ctrl-C (tmux polling included)`);
      t.match(text, /EXIT=130/);
      t.match(text, /interrupted/);
      t.notOk(existsSync(path.join(ws, 'adp.json')), 'nothing stored');
    },
  );

  t.test('a table on a terminal; a bulk delete asks, saying how many, and can be declined', async (t) => {
    const ws = await scratch(t);
    const term = terminal(t, { NFV_WORKSPACE: ws });
    term.run(`${BIN} graphs create -f ${GRAPHS} >/dev/null; ${BIN} simulations list; echo EXIT=$?`);
    t.match(await term.until(/EXIT=\d+/), /no simulations[\s\S]*EXIT=0/);
    term.run('clear');
    term.run(`${BIN} graphs delete-all; echo EXIT=$?`);
    await term.until(/Delete the 1 graph\?/);
    term.type('n');
    term.keys('Enter');
    t.match(await term.until(/EXIT=\d+/), /cancelled[\s\S]*EXIT=0/);
    term.run('clear');
    term.run(`${BIN} graphs delete-all; echo EXIT=$?`);
    await term.until(/Delete the 1 graph\?/);
    term.type('y');
    term.keys('Enter');
    await term.until(/EXIT=\d+/);
    term.run('clear');
    term.run(`${BIN} graphs list; echo EXIT=$?`);
    t.match(await term.until(/EXIT=\d+/), /no graphs[\s\S]*EXIT=0/, 'the graphs went');
    term.run('clear');
    term.run(`${BIN} init ${ws}; echo EXIT=$?`);
    await term.until(/is not empty; add the samples to it\?/);
    term.type('n');
    term.keys('Enter');
    t.match(
      await term.until(/EXIT=\d+/),
      /cancelled[\s\S]*EXIT=0/,
      'init asks on a terminal before adding to a folder in use',
    );
  });
});

const HAVE_PYTHON = existsSync(PYTHON);

t.test(
  'on a terminal whose size was never set (0x0), the spinner draws, Ctrl-C stops it, exit 130',
  { skip: !HAVE_PYTHON && '/usr/bin/python3 is not installed here (apt-get install python3)' },
  async (t) => {
    const ws = await scratch(t);
    const driver = path.join(ROOT, 'test', 'fixtures', 'zero-size-terminal.py');
    // Ctrl-C once the spinner has counted past a second: a width of 0 hung it on its second frame, writing
    // cursor-up and clear-line without end, so the pattern never came and the driver killed it at its deadline.
    const run = spawnSync(
      '/usr/bin/env',
      ['-u', 'NODE_OPTIONS', '-u', 'CI', PYTHON, driver, String.raw`\(1\.\d s\)`, '30', BIN, 'simulate', SAMPLE],
      {
        encoding: 'utf8',
        env: { ...process.env, NO_COLOR: '1', TERM: 'xterm', NFV_WORKSPACE: ws, NFV_SOLVER_FAULT: 'delay:30000' },
      },
    );
    t.equal(run.status, 0, run.stderr);
    const seen = JSON.parse(run.stdout) as {
      size: number[];
      matched: boolean;
      exit: number;
      secondsAfterCtrlC: number;
      bytes: number;
      killed: boolean;
      tail: string;
    };
    t.same(seen.size, [0, 0], 'the terminal has no size');
    t.ok(seen.matched, `the spinner counted the seconds: ${JSON.stringify(seen.tail)}`);
    t.notOk(seen.killed, 'nfv ended by itself');
    t.equal(seen.exit, 130, 'interrupted');
    t.ok(seen.secondsAfterCtrlC < 2, `ended ${seen.secondsAfterCtrlC} s after Ctrl-C`);
    t.ok(seen.bytes < 20_000, `${seen.bytes} bytes drawn, not an endless redraw`);
    t.match(seen.tail, /interrupted/);
  },
);
