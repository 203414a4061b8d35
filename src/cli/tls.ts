/**
 * serve --tls-cert, --tls-key and --tls-ca: the files read and checked before anything listens, so that a missing,
 * unreadable or wrong file is one line naming its flag and path (exit 2), never a failure of the listener later.
 */
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { open } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';
import type { TlsMaterial } from '../http/server.js';
import { NfvError, badRequest } from '../model/errors.js';
import { MAX_TLS_FILE_BYTES } from '../model/limits.js';
import { pathProblem } from './files.js';

export interface TlsFlags {
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
}

/** A file named by a flag, as text, at most MAX_TLS_FILE_BYTES (a FIFO such as `<(...)` works; /dev/zero does not). */
async function readFlagFile(flag: string, file: string): Promise<string> {
  const refuse = (why: string) => badRequest(`${flag} ${file}: ${why}`);
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (e) {
    throw refuse(pathProblem(e));
  }
  try {
    const chunks: Buffer[] = [];
    let size = 0;
    for (;;) {
      const chunk = Buffer.alloc(64 * 1024);
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      size += bytesRead;
      if (size > MAX_TLS_FILE_BYTES) throw refuse(`larger than ${MAX_TLS_FILE_BYTES} bytes, not a PEM file`);
      chunks.push(chunk.subarray(0, bytesRead));
    }
    return Buffer.concat(chunks).toString('utf8');
  } catch (e) {
    throw e instanceof NfvError ? e : refuse(pathProblem(e));
  } finally {
    await handle.close();
  }
}

const pemBlocks = (text: string, label: RegExp): string[] =>
  [...text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g)]
    .filter((m) => label.test(m[1]!))
    .map((m) => m[0]);

/** What else a file holds, to say when it is not what its flag wants (two files swapped, a DER file). */
function holds(text: string): string {
  if (pemBlocks(text, /PRIVATE KEY$/).length) return ' (it holds a private key)';
  if (pemBlocks(text, /^CERTIFICATE$/).length) return ' (it holds a certificate)';
  if (!text.includes('-----BEGIN '))
    return ' (no PEM block: a DER file converts with openssl x509 or pkey -inform der)';
  return '';
}

/** Every certificate of a PEM file (a certificate and its chain, or a CA bundle), parsed; at least one. */
function certificates(flag: string, file: string, text: string): X509Certificate[] {
  const blocks = pemBlocks(text, /^CERTIFICATE$/);
  if (!blocks.length)
    throw badRequest(`${flag} ${file}: no PEM certificate (-----BEGIN CERTIFICATE-----)${holds(text)}`);
  return blocks.map((block, k) => {
    try {
      return new X509Certificate(block);
    } catch (e) {
      throw badRequest(`${flag} ${file}: certificate ${k + 1} is not a valid certificate (${(e as Error).message})`);
    }
  });
}

function privateKey(flag: string, file: string, text: string): KeyObject {
  const [block, more] = pemBlocks(text, /PRIVATE KEY$/);
  if (block === undefined)
    throw badRequest(`${flag} ${file}: no PEM private key (-----BEGIN PRIVATE KEY-----)${holds(text)}`);
  if (more !== undefined) throw badRequest(`${flag} ${file}: more than one private key`);
  // PKCS#8 (BEGIN ENCRYPTED PRIVATE KEY) or the older PEM header (Proc-Type: 4,ENCRYPTED).
  if (/^-----BEGIN ENCRYPTED|^Proc-Type: *4, *ENCRYPTED/m.test(block))
    throw badRequest(`${flag} ${file}: the key is encrypted; give it without a passphrase (openssl pkey -in KEY)`);
  try {
    return createPrivateKey({ key: block, format: 'pem' });
  } catch (e) {
    throw badRequest(`${flag} ${file}: not a valid private key (${(e as Error).message})`);
  }
}

/**
 * The TLS material serve's flags name, or undefined without them. Refused with exit 2: a flag without its partner,
 * a file that cannot be read, that holds no PEM certificate or key, a key that is not the certificate's, or a
 * combination OpenSSL refuses (a key too small for its security level).
 */
export async function readTls(flags: TlsFlags): Promise<TlsMaterial | undefined> {
  const { tlsCert, tlsKey, tlsCa } = flags;
  if (tlsCert === undefined && tlsKey === undefined) {
    if (tlsCa !== undefined)
      throw badRequest('--tls-ca needs --tls-cert and --tls-key (client certificates are checked only over TLS)');
    return undefined;
  }
  if (tlsKey === undefined) throw badRequest(`--tls-cert needs --tls-key (the private key of ${tlsCert})`);
  if (tlsCert === undefined) throw badRequest(`--tls-key needs --tls-cert (the certificate of ${tlsKey})`);
  const cert = await readFlagFile('--tls-cert', tlsCert);
  const [leaf] = certificates('--tls-cert', tlsCert, cert);
  const keyText = await readFlagFile('--tls-key', tlsKey);
  const key = privateKey('--tls-key', tlsKey, keyText);
  if (!leaf!.checkPrivateKey(key))
    throw badRequest(`--tls-key ${tlsKey}: not the private key of the certificate in --tls-cert ${tlsCert}`);
  let ca: string | undefined;
  if (tlsCa !== undefined) {
    ca = await readFlagFile('--tls-ca', tlsCa);
    certificates('--tls-ca', tlsCa, ca);
  }
  const material: TlsMaterial = { cert, key: keyText, ...(ca === undefined ? {} : { ca }) };
  try {
    createSecureContext(material);
  } catch (e) {
    throw badRequest(`--tls-cert ${tlsCert}, --tls-key ${tlsKey}: refused by OpenSSL (${(e as Error).message})`);
  }
  return material;
}
