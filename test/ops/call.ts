/**
 * In-process requests for the operation tests: `execute` on the operation table over a fresh workspace, as serve
 * mode and `nfv request` run them, with no listener and no child process.
 */
import { execute, type Answered, type Outcome } from '../../src/ops/operation.js';
import { OPERATIONS } from '../../src/ops/table.js';
import { Workspace } from '../../src/store/workspace.js';
import { scratch, snapshot } from '../helpers.js';

/** A workspace in a fresh folder, removed when the test ends. */
export const workspace = async (t: Tap.Test) => new Workspace(await scratch(t));

/** One request through the table; an object body is sent as JSON. */
export const call = (ws: Workspace, method: string, target: string, body?: string | object): Promise<Outcome> =>
  execute(OPERATIONS, ws, { method, target, body: typeof body === 'object' ? JSON.stringify(body) : body });

/** What an answer carries: the envelope's content, the JSON value, the text, or nothing. */
export function content(o: Answered): any {
  const r = o.reply;
  return r.kind === 'envelope' ? r.content : r.kind === 'json' ? r.value : r.kind === 'text' ? r.body : undefined;
}

/** A request that must succeed with `status`; answers what it carries. */
export async function ok(
  t: Tap.Test,
  ws: Workspace,
  method: string,
  target: string,
  body?: string | object,
  status?: number,
): Promise<any> {
  const o = await call(ws, method, target, body);
  if (!o.ok) {
    t.fail(`${method} ${target}: ${o.status} ${o.error}`);
    return undefined;
  }
  if (status !== undefined) t.equal(o.status, status, `${method} ${target}`);
  return content(o);
}

/**
 * A request that must be refused with `status` and a message matching `message`, leaving every file of the
 * workspace as it was.
 */
export async function refused(
  t: Tap.Test,
  ws: Workspace,
  method: string,
  target: string,
  body: string | object | undefined,
  status: number,
  message: RegExp,
): Promise<void> {
  const before = await snapshot(ws.dir);
  const o = await call(ws, method, target, body);
  t.match(o, { ok: false, status }, `${method} ${target}: ${status}`);
  if (!o.ok) t.match(o.error, message);
  t.same(await snapshot(ws.dir), before, `${method} ${target} changed nothing`);
}
