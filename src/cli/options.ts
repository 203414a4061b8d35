/**
 * The global options of every command, the workspace and output format they select, and the exit code the
 * command sets.
 */
import { Command, Option } from 'commander';
import { badRequest } from '../model/errors.js';
import type { Format } from '../model/schema.js';
import { DEFAULT_LOCK_TIMEOUT_MS } from '../model/limits.js';
import { PostgresAreas } from '../store/postgres.js';
import { Workspace, resolveWorkspaceDir } from '../store/workspace.js';
import { say, type OutputFormat } from './output.js';

export interface GlobalOptions {
  workspace?: string;
  database?: string;
  quiet?: boolean;
  verbose?: boolean;
  lockTimeout?: number;
  format?: OutputFormat;
  in?: Format;
}

/** The exit code of the command that ran; commands set it, `run` returns it. */
export const state = { exitCode: 0 as number };

export const globals = (cmd: Command) => cmd.optsWithGlobals<GlobalOptions>();
export const workspaceOf = (cmd: Command) => {
  const g = globals(cmd);
  const seconds =
    g.lockTimeout ??
    (process.env.NFV_LOCK_TIMEOUT ? lockSeconds('NFV_LOCK_TIMEOUT', process.env.NFV_LOCK_TIMEOUT) : undefined);
  // A workspace the user named (-w, NFV_WORKSPACE) must exist to be read; the default one reads as empty.
  const named = g.workspace !== undefined || process.env.NFV_WORKSPACE !== undefined;
  const lockTimeoutMs = seconds === undefined ? undefined : seconds * 1000;
  const url = databaseUrlOf(cmd);
  return new Workspace(resolveWorkspaceDir(g.workspace), {
    lockTimeoutMs,
    mustExist: named,
    database: url ? databaseAt(url, lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS) : undefined,
    // Warnings about the workspace (a torn inventory journal) go to stderr: serve's log.
    warn: say,
  });
};

/** The database a command names: --database, else NFV_DATABASE_URL. */
export const databaseUrlOf = (cmd: Command): string | undefined =>
  globals(cmd).database ?? (process.env.NFV_DATABASE_URL || undefined);

/** One connection pool per database for the whole process (a command may make several requests). */
const databases = new Map<string, PostgresAreas>();
export function databaseAt(url: string, lockTimeoutMs: number): PostgresAreas {
  let db = databases.get(url);
  if (!db) databases.set(url, (db = new PostgresAreas(url, lockTimeoutMs)));
  return db;
}

/** A lock wait in seconds, 0 to 600, from a flag or the environment. */
function lockSeconds(name: string, text: string): number {
  const n = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || n > 600)
    throw badRequest(`${name}: ${JSON.stringify(text).slice(0, 40)} is not a number of seconds from 0 to 600`);
  return n;
}

export function addGlobalOptions(program: Command): Command {
  return program
    .option('-w, --workspace <dir>', 'workspace folder (default $NFV_WORKSPACE or ./workspaces/default)')
    .option(
      '--database <url>',
      'keep graphs, requirements, substrates, simulations and /fwd nodes in PostgreSQL (default $NFV_DATABASE_URL)',
    )
    .option(
      '--lock-timeout <seconds>',
      'how long to wait for another process holding the workspace lock (default 5, $NFV_LOCK_TIMEOUT)',
      (v) => lockSeconds('--lock-timeout', v),
    )
    .addOption(
      new Option('--format <format>', 'output format (default: table on a terminal, json when piped)').choices([
        'xml',
        'json',
        'table',
      ]),
    )
    .addOption(new Option('--in <format>', 'input format (default: detected)').choices(['xml', 'json']))
    .option('-q, --quiet', 'no messages on stderr but errors')
    .option('-v, --verbose', 'also say each request to the operation table, its status and time, on stderr');
}

export const outputFormat = (cmd: Command): OutputFormat =>
  globals(cmd).format ?? (process.stdout.isTTY ? 'table' : 'json');
