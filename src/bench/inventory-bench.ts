/**
 * What the inventory benchmarks share: `nfv serve` started on a workspace, the comparison query set of
 * ../shared/bench/inventory (read through its own Python module), and a query's URL.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { NFV_BIN, SHARED, withThisNode } from './reference.js';

export const GENERATOR = path.join(SHARED, 'bench', 'inventory');

export interface Serve {
  url: string;
  pid: number;
  stop: () => Promise<void>;
}

/** `nfv serve` on a free port of loopback; `args` add flags (`--database URL`). */
export async function serve(workspace: string, args: string[] = []): Promise<Serve> {
  const child = spawn(NFV_BIN, ['serve', '--port', '0', '--workspace', workspace, ...args], {
    env: withThisNode(),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
      const m = /listening on (\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', () => reject(new Error(`nfv serve exited: ${err}`)));
  });
  return { url, pid: child.pid!, stop: () => new Promise((r) => (child.on('exit', () => r()), child.kill('SIGTERM'))) };
}

export const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** The 17 queries of the comparison set for a generated fleet: (name, path, params, ordered). */
export function querySet(metaFile: string): [string, string, Record<string, unknown>, boolean][] {
  return JSON.parse(
    execFileSync(
      'python3',
      [
        '-c',
        `import json,sys; sys.path.insert(0, ${JSON.stringify(GENERATOR)}); from queries import query_set; ` +
          `print(json.dumps(query_set(json.load(open(${JSON.stringify(metaFile)})))))`,
      ],
      { encoding: 'utf8' },
    ),
  ) as [string, string, Record<string, unknown>, boolean][];
}

/** A `/v4` query's URL, its parameters JSON-encoded unless already text. */
export function queryUrl(base: string, p: string, params: Record<string, unknown>): string {
  const pairs = Object.entries(params).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]);
  return `${base}/v4${p}${pairs.length ? `?${new URLSearchParams(pairs)}` : ''}`;
}
