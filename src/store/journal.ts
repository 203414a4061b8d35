/**
 * An append-only journal: one line per record, `HEADER<TAB>PAYLOAD\n`, where the header is a small JSON object that
 * carries the payload's byte length (`b`). A writer appends and fsyncs, so a record is durable once `append`
 * returns. Readers need no lock: they read complete lines up to the end they saw. Headers can be read without parsing
 * payloads. `rewrite` replaces the whole file atomically (compaction); its new identity tells readers to start over.
 * Writers call `append` and `rewrite` while holding the workspace lock of `file` (`Workspace.exclusive`).
 *
 * How the end is judged, by readers and writers alike. A writer appends whole lines (header, payload, newline) as
 * one buffer, and a payload (JSON text) has no raw newline, so a write cut short ends in a newline only where a
 * whole line ends:
 * - every line that ends in a newline, the last one too, must be whole (a JSON header, a tab, exactly `b` bytes);
 *   anything else is damage, which readers and writers refuse (409 naming the byte) and leave untouched;
 * - the bytes after the last newline are a torn tail when they can be the start of a line (no tab yet, or a JSON
 *   header and at most `b` payload bytes): a write cut short by a kill, or a reader's view of a write under way.
 *   Readers leave it out and report its size (`torn`); the next writer cuts it, under the lock, before appending.
 *   Bytes after the last newline that cannot be the start of a line are damage as above.
 * So a writer never appends after a line that readers would refuse or leave out.
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
  /** Bytes of a torn tail after `end`, left out (0 if none). */
  torn: number;
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

  /**
   * Complete lines from byte `from` (a line start) on, if the file is still `id`; else from the start. Damage seen
   * while the file changed under the read is read again, `retries` times at most.
   */
  async read(from: number, id: string, retries = 3): Promise<ReadResult<H>> {
    // The common case of a reader that is up to date costs one stat.
    const seen = await stat(this.file, { bigint: true }).catch(() => undefined);
    if (seen && `${seen.dev}:${seen.ino}` === id && Number(seen.size) === from)
      return { lines: [], end: from, torn: 0, id };
    let handle;
    try {
      handle = await open(this.file, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { lines: [], end: 0, torn: 0, id: '' };
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
      try {
        const { lines, used } = this.parse(bytes.subarray(0, got), start);
        return { lines, end: start + used, torn: got - used, id: current };
      } catch (e) {
        // A writer that cut a torn tail and appended while this read was under way can make what was read look
        // damaged: read again when the file changed meanwhile.
        const after = await handle.stat({ bigint: true });
        if (retries > 0 && (after.size !== s.size || after.mtimeNs !== s.mtimeNs))
          return this.read(from, id, retries - 1);
        throw e;
      }
    } finally {
      await handle.close();
    }
  }

  /** Splits bytes that end where the file ended into lines and a torn tail (left out); refuses damage. */
  private parse(bytes: Buffer, base: number): { lines: Line<H>[]; used: number } {
    const lines: Line<H>[] = [];
    let at = 0;
    for (;;) {
      const nl = bytes.indexOf(NL, at);
      if (nl < 0) {
        this.checkTail(bytes.subarray(at), base + at);
        return { lines, used: at };
      }
      lines.push(this.line(bytes, at, nl, base));
      at = nl + 1;
    }
  }

  /** The line of `bytes` from `at` to the newline at `nl`, or damage. */
  private line(bytes: Buffer, at: number, nl: number, base: number): Line<H> {
    const tab = bytes.indexOf(TAB, at);
    if (tab < 0 || tab > nl) throw this.damaged(`the line at byte ${base + at} has no header`);
    const header = this.header(bytes, at, tab, base);
    if (header.b !== nl - tab - 1)
      throw this.damaged(`the line at byte ${base + at} does not have the length its header gives`);
    return { header, payload: bytes.subarray(tab + 1, nl) };
  }

  private header(bytes: Buffer, at: number, tab: number, base: number): H {
    let header: H;
    try {
      header = JSON.parse(bytes.toString('utf8', at, tab)) as H;
    } catch {
      throw this.damaged(`the header at byte ${base + at} is not JSON`);
    }
    if (typeof header !== 'object' || header === null || !Number.isSafeInteger(header.b) || header.b < 0)
      throw this.damaged(`the header at byte ${base + at} gives no length`);
    return header;
  }

  /** Bytes after the last newline (at byte `base`): a torn tail if they can start a line, else damage. */
  private checkTail(tail: Buffer, base: number): void {
    const tab = tail.indexOf(TAB);
    if (tab < 0) return;
    if (tail.length - tab - 1 > this.header(tail, 0, tab, base).b)
      throw this.damaged(`the line at byte ${base} is longer than its header gives and has no newline`);
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
   * Appends encoded lines and fsyncs; first cuts a torn tail (see the top of this file), and refuses a journal whose
   * last line or tail is damaged. Returns the file's identity, its new end and the bytes cut. `guard` runs before
   * anything is changed (it throws if the lock was lost).
   */
  async append(bytes: Buffer, guard: () => void): Promise<{ end: number; id: string; cut: number }> {
    const handle = await open(this.file, 'a+');
    try {
      const s = await handle.stat({ bigint: true });
      const size = Number(s.size);
      const end = size > 0 ? await this.lastLineEnd(handle, size) : 0;
      guard();
      if (end < size) await handle.truncate(end);
      if (bytes.length) {
        let written = 0;
        while (written < bytes.length)
          written += (await handle.write(bytes, written, bytes.length - written, end + written)).bytesWritten;
        await handle.sync();
      }
      if (s.size === 0n) await syncFolder(path.dirname(this.file));
      return { end: end + bytes.length, id: `${s.dev}:${s.ino}`, cut: size - end };
    } finally {
      await handle.close();
    }
  }

  /**
   * The offset after the last complete line, judging that line and the tail after it as readers do (reading
   * backwards in blocks from the end of a file of `size` bytes, back to the newline before the last line).
   */
  private async lastLineEnd(handle: Awaited<ReturnType<typeof open>>, size: number): Promise<number> {
    const blocks: Buffer[] = [];
    let start = size;
    for (let newlines = 0; start > 0 && newlines < 2;) {
      const from = Math.max(0, start - 64 * 1024);
      const block = Buffer.allocUnsafe(start - from);
      let got = 0;
      while (got < block.length) {
        const { bytesRead } = await handle.read(block, got, block.length - got, from + got);
        if (bytesRead === 0) throw new Error(`the journal ${this.file} shrank while it was locked`);
        got += bytesRead;
      }
      for (let k = block.indexOf(NL); k >= 0; k = block.indexOf(NL, k + 1)) newlines++;
      blocks.unshift(block);
      start = from;
    }
    const bytes = Buffer.concat(blocks);
    const last = bytes.lastIndexOf(NL);
    this.checkTail(bytes.subarray(last + 1), start + last + 1);
    if (last >= 0) {
      const before = last > 0 ? bytes.lastIndexOf(NL, last - 1) : -1;
      this.line(bytes, before + 1, last, start);
    }
    return start + last + 1;
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
