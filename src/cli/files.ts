/** Files and folders the user names: reading input documents, writing outputs, refusals in words. */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeUtf8 } from '../model/codec.js';
import { badRequest } from '../model/errors.js';

/** Why the operating system refused a path the user gave, in words. */
export function pathProblem(e: unknown): string {
  const code = (e as NodeJS.ErrnoException)?.code;
  const words: Record<string, string> = {
    ENOENT: 'no such file or folder',
    EISDIR: 'it is a folder',
    ENOTDIR: 'a part of the path is not a folder',
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EROFS: 'read-only file system',
    ENOSPC: 'no space left on the device',
    EEXIST: 'it exists and is not a folder',
  };
  return (code && Object.hasOwn(words, code) ? words[code] : undefined) ?? (e as Error).message;
}

/** Writes a file the user named (`what` is the flag, e.g. `-o`); the OS's refusal is a usage error naming it. */
export async function writeUserFile(what: string, file: string, content: string): Promise<void> {
  try {
    await writeFile(file, content);
  } catch (e) {
    throw badRequest(`${what} ${file}: ${pathProblem(e)}`);
  }
}

/** Creates a folder the user named, with its parents. */
export async function makeUserFolder(what: string, dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
  } catch (e) {
    throw badRequest(`${what} ${dir}: ${pathProblem(e)}`);
  }
}

/** Reads an input document from a file, or from stdin for `-` or when no file is given and stdin is not a terminal. */
export async function readInput(file: string | undefined): Promise<string> {
  if (file && file !== '-') {
    const name = file.startsWith('@') ? file.slice(1) : file;
    let bytes: Buffer;
    try {
      bytes = await readFile(name);
    } catch (e) {
      throw badRequest(`cannot read ${file}: ${pathProblem(e)}`);
    }
    return decodeUtf8(bytes, name);
  }
  if (process.stdin.isTTY) throw badRequest('no input: give -f FILE or pipe a document to stdin');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return decodeUtf8(Buffer.concat(chunks), 'standard input');
}

/**
 * A file shipped with nfv (`package.json`, `samples/`), found from this module's place upwards: the same code runs
 * from `src/` in the tests, and from the bundle in `dist/bundle/` or the compiled `dist/` otherwise.
 */
export function shippedPath(...parts: string[]): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`nfv's own package.json is not above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
  return path.join(dir, ...parts);
}
