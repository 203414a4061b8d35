/**
 * An append-only journal: one line per record, `HEADER<TAB>PAYLOAD\n`, where the header is a small JSON object that
 * carries the payload's byte length (`b`). A writer appends and fsyncs, so a record is durable once `append`
 * returns; a writer killed mid-append leaves a torn last line, which readers leave out and the next writer cuts
 * off. Readers need no lock: they read complete lines up to the end they saw. Headers can be read without parsing
 * payloads. `rewrite` replaces the whole file atomically (compaction); its new identity tells readers to start over.
 * Writers call `append` and `rewrite` while holding the workspace lock of `file` (`Workspace.exclusive`).
 */
import { open, rename, stat, unlink } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { NfvError } from '../model/errors.js';

export interface Header {
  /** Payload bytes. */
  b: number;
}

export interface Line<H extends Header> {
  header: H;
  /** The payload's bytes (UTF-8 JSON text), not yet parsed. */
  payload: Buffer;
}

export interface ReadResult<H extends Header> {
  lines: Line<H>[];
  /** Byte offset after the last complete line. */
  end: number;
  /** Identity of the file read (changes when it is rewritten); '' when there is none. */
  id: string;
}

const NL = 0x0a;
const TAB = 0x09;

export class Journal<H extends Header> {
  constructor(readonly file: string) {}

  private damaged(why: string): NfvError {
    return new NfvError(
      409,
      `the journal ${this.file} is damaged: ${why}; nfv leaves it untouched (repair it or move it away)`,
    );
  }

  /** Complete lines from byte `from` (a line start) on, if the file is still `id`; else from the start. */
  async read(from: number, id: string): Promise<ReadResult<H>> {
    // The common case of a reader that is up to date costs one stat.
    const seen = await stat(this.file, { bigint: true }).catch(() => undefined);
    if (seen && `${seen.dev}:${seen.ino}` === id && Number(seen.size) === from) return { lines: [], end: from, id };
    let handle;
    try {
      handle = await open(this.file, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { lines: [], end: 0, id: '' };
      throw e;
    }
    try {
      const s = await handle.stat({ bigint: true });
      const current = `${s.dev}:${s.ino}`;
      const start = current === id ? from : 0;
      const size = Number(s.size);
      const bytes = Buffer.allocUnsafe(Math.max(0, size - start));
      let got = 0;
      while (got < bytes.length) {
        const { bytesRead } = await handle.read(bytes, got, bytes.length - got, start + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      const { lines, used } = this.parse(bytes.subarray(0, got), start);
      return { lines, end: start + used, id: current };
    } finally {
      await handle.close();
    }
  }

  /**
   * Splits bytes into lines; a torn last line (no newline, or fewer payload bytes than its header says) is left out.
   */
  private parse(bytes: Buffer, base: number): { lines: Line<H>[]; used: number } {
    const lines: Line<H>[] = [];
    let at = 0;
    for (;;) {
      const nl = bytes.indexOf(NL, at);
      if (nl < 0) return { lines, used: at };
      const tab = bytes.indexOf(TAB, at);
      if (tab < 0 || tab > nl) throw this.damaged(`the line at byte ${base + at} has no header`);
      let header: H;
      try {
        header = JSON.parse(bytes.toString('utf8', at, tab)) as H;
      } catch {
        throw this.damaged(`the header at byte ${base + at} is not JSON`);
      }
      if (header.b !== nl - tab - 1) {
        // A payload cut short by a killed writer is only possible on the last line.
        if (bytes.indexOf(NL, nl + 1) < 0 && header.b > nl - tab - 1) return { lines, used: at };
        throw this.damaged(`the line at byte ${base + at} does not have the length its header gives`);
      }
      lines.push({ header, payload: bytes.subarray(tab + 1, nl) });
      at = nl + 1;
    }
  }

  /** Encodes records as journal lines. */
  static encode<H extends Header>(records: { header: Omit<H, 'b'>; payload: string }[]): Buffer {
    return Buffer.concat(
      records.map(({ header, payload }) => {
        const body = Buffer.from(payload);
        return Buffer.concat([
          Buffer.from(`${JSON.stringify({ ...header, b: body.length })}\t`),
          body,
          Buffer.from('\n'),
        ]);
      }),
    );
  }

  /**
   * Appends encoded lines and fsyncs; first cuts a torn last line left by a killed writer. Returns the file's
   * identity and its new end. `guard` runs right before the write (it throws if the lock was lost).
   */
  async append(bytes: Buffer, guard: () => void): Promise<{ end: number; id: string }> {
    const handle = await open(this.file, 'a+');
    try {
      const s = await handle.stat({ bigint: true });
      let size = Number(s.size);
      if (size > 0) size = await this.cutTornTail(handle, size);
      guard();
      if (bytes.length) {
        let written = 0;
        while (written < bytes.length)
          written += (await handle.write(bytes, written, bytes.length - written, size + written)).bytesWritten;
        await handle.sync();
      }
      if (s.size === 0n) await syncFolder(path.dirname(this.file));
      return { end: size + bytes.length, id: `${s.dev}:${s.ino}` };
    } finally {
      await handle.close();
    }
  }

  private async cutTornTail(handle: Awaited<ReturnType<typeof open>>, size: number): Promise<number> {
    const last = Buffer.alloc(1);
    await handle.read(last, 0, 1, size - 1);
    if (last[0] === NL) return size;
    // Find the end of the last complete line, reading backwards in blocks.
    const block = Buffer.alloc(64 * 1024);
    for (let end = size; end > 0;) {
      const start = Math.max(0, end - block.length);
      await handle.read(block, 0, end - start, start);
      const nl = block.subarray(0, end - start).lastIndexOf(NL);
      if (nl >= 0) {
        await handle.truncate(start + nl + 1);
        return start + nl + 1;
      }
      end = start;
    }
    await handle.truncate(0);
    return 0;
  }

  /** Replaces the journal with `bytes` atomically: a temporary file, fsynced, renamed over the journal. */
  async rewrite(bytes: Buffer, guard: () => void): Promise<{ end: number; id: string }> {
    const tmp = `${this.file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      const handle = await open(tmp, 'w');
      try {
        await handle.writeFile(bytes);
        await handle.sync();
      } finally {
        await handle.close();
      }
      guard();
      await rename(tmp, this.file);
      await syncFolder(path.dirname(this.file));
    } catch (e) {
      await unlink(tmp).catch(() => undefined);
      throw e;
    }
    const s = await stat(this.file, { bigint: true });
    return { end: bytes.length, id: `${s.dev}:${s.ino}` };
  }
}

/** Makes a new or renamed directory entry durable. */
async function syncFolder(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
