/**
 * PuppetDB's command endpoint `/pdb/cmd/v1` in front of the inventory's ingest: the query-parameter form that the
 * Puppet terminus sends (`?command=replace_catalog&version=9&certname=C&producer-timestamp=T&checksum=SHA1`, the bare
 * payload as the body) and PuppetDB's older body form (`{"command", "version", "payload"}`), checked with PuppetDB's
 * words and turned into the `{command, version, payload}` that the store applies. Pure: no store, no clock.
 * `checksum` is taken and not compared, as PuppetDB has done since 4.0 (PDB-2252: "The checksum here is vestigial"):
 * pypuppetdb sends the SHA-1 of Python's `str(payload)`, which no body matches.
 */
import { NfvError, badRequest, clip, quote } from '../model/errors.js';
import { parseJson } from '../model/codec.js';
import { parseInstant } from './values.js';

/** The commands PuppetDB 7 knows, in the order its "must be one of" message lists them. */
export const PUPPETDB_COMMANDS = [
  'configure expiration',
  'deactivate node',
  'replace catalog',
  'replace catalog inputs',
  'replace facts',
  'store report',
] as const;

/** PuppetDB 7.12.1's oldest version of each command that is not retired. */
const MINIMUM_VERSION = new Map<string, number>([
  ['configure expiration', 1],
  ['deactivate node', 3],
  ['replace catalog', 6],
  ['replace catalog inputs', 1],
  ['replace facts', 4],
  ['store report', 5],
]);

/** The versions of each command nfv takes (the one Puppet 7 sends first; facts also as Puppet 6 sends them). */
const TAKEN_VERSIONS = new Map<string, number[]>([
  ['deactivate node', [3]],
  ['replace catalog', [9]],
  ['replace catalog inputs', [1]],
  ['replace facts', [5, 4]],
  ['store report', [8]],
]);

const REQUIRED = ['command', 'version', 'certname'];
const OPTIONAL = ['producer-timestamp', 'checksum', 'secondsToWaitForCompletion'];
/** The parameters that make a request the query-parameter form; without them the body is the whole command. */
const QUERY_FORM = ['command', 'version', 'certname', 'producer-timestamp'];

/** A checked command: what the store applies, or nothing for a command that is accepted and not stored. */
export interface PdbCommand {
  /** The command as the store takes it; absent for `replace catalog inputs`, which nfv does not keep. */
  apply?: { command: string; version: number; payload: unknown };
  /** `secondsToWaitForCompletion` was given: the answer says the command was processed. */
  waited: boolean;
}

/** What the request brought: its query, its body text as sent, its Content-Type header. */
export interface CommandRequest {
  query: URLSearchParams;
  text: string | undefined;
  contentType: string | undefined;
}

/** A command name as PuppetDB takes it: underscores (or hyphens) for spaces, any case. */
const normalise = (name: string) => name.replace(/[_-]/g, ' ').toLowerCase();

/** A value as PuppetDB prints it in its messages: quoted, or nil. */
const shown = (value: unknown) => (value === undefined || value === null || value === '' ? 'nil' : quote(value));

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks a `/pdb/cmd/v1` request as PuppetDB does; throws the 400 (or 415) that refuses it. */
export function checkCommand(request: CommandRequest): PdbCommand {
  const { query, text, contentType } = request;
  // PuppetDB takes a command without Content-Type, or as application/json (any parameters); anything else is a 415.
  const mediaType = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (mediaType !== '' && mediaType !== 'application/json')
    throw new NfvError(415, `content type ${clip(mediaType)} not supported`);
  const queryForm = QUERY_FORM.some((k) => query.has(k));
  const name = queryForm ? normalise(query.get('command') ?? '') : undefined;
  const prefix = (command: string | undefined, certname: unknown) =>
    `Command ${shown(command)} for certname ${shown(certname)} is invalid.`;
  const unknown = [...new Set(query.keys())].filter((k) => !REQUIRED.includes(k) && !OPTIONAL.includes(k));
  if (unknown.length)
    throw badRequest(`${prefix(name, query.get('certname'))} Command has invalid parameters: ${unknown.join(', ')}.`);
  if (queryForm) {
    const missing = REQUIRED.filter((k) => !query.get(k));
    if (missing.length)
      throw badRequest(
        `${prefix(name, query.get('certname'))} Command is missing required parameters: ${missing.join(', ')}.`,
      );
  }
  if (text === undefined || text.trim() === '') throw badRequest('a request body is required');
  const body = parseJson(text);
  let command: string;
  let version: unknown;
  let certname: unknown;
  let payload: unknown;
  if (queryForm) {
    command = name!;
    version = query.get('version')!;
    certname = query.get('certname')!;
    payload = body;
  } else {
    if (!isObject(body))
      throw badRequest('the body must be a command {"command", "version", "payload"} (or use the query parameters)');
    for (const key of Object.keys(body))
      if (key !== 'command' && key !== 'version' && key !== 'payload')
        throw badRequest(`the command has an unknown key ${quote(key)} (it takes command, version and payload)`);
    certname = isObject(body.payload) ? body.payload.certname : undefined;
    if (typeof body.command !== 'string' || body.command === '')
      throw badRequest(`${prefix(undefined, certname)} Command is missing required parameters: command.`);
    command = normalise(body.command);
    if (body.version === undefined)
      throw badRequest(`${prefix(command, certname)} Command is missing required parameters: version.`);
    version = body.version;
    payload = body.payload;
  }
  const invalid = prefix(command, certname);
  if (!(PUPPETDB_COMMANDS as readonly string[]).includes(command))
    throw badRequest(`${invalid} Command must be one of: ${PUPPETDB_COMMANDS.join(', ')}.`);
  const number = typeof version === 'string' && /^\d{1,9}$/.test(version) ? Number(version) : version;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 0)
    throw badRequest(`${invalid} Version ${shown(version)} is not a whole number.`);
  const minimum = MINIMUM_VERSION.get(command)!;
  if (number < minimum)
    throw badRequest(
      `${invalid} Version ${number} of command ${quote(command)} is retired. ` +
        `The minimum supported version is ${minimum}.`,
    );
  const producerTime = query.get('producer-timestamp');
  if (producerTime !== null && parseInstant(producerTime) === undefined)
    throw badRequest(`${invalid} producer-timestamp ${shown(producerTime)} is not a timestamp.`);
  const wait = query.get('secondsToWaitForCompletion');
  if (wait !== null && !(wait !== '' && Number.isFinite(Number(wait)) && Number(wait) >= 0))
    throw badRequest(`${invalid} secondsToWaitForCompletion ${shown(wait)} is not a number of seconds.`);
  if (command === 'configure expiration')
    throw badRequest(`nfv does not keep expiration settings: configure expiration is refused`);
  const taken = TAKEN_VERSIONS.get(command)!;
  if (!taken.includes(number))
    throw badRequest(`${invalid} nfv takes version ${taken.join(' or ')} of command ${quote(command)}, not ${number}.`);
  if (!isObject(payload)) throw badRequest(`${invalid} The payload must be a JSON object.`);
  if (queryForm && payload.certname !== certname)
    throw badRequest(`${invalid} The payload's certname ${shown(payload.certname)} is not the certname parameter.`);
  const waited = wait !== null;
  if (command === 'replace catalog inputs') {
    checkCatalogInputs(payload, invalid);
    return { waited };
  }
  return { apply: { command, version: number, payload }, waited };
}

/** Replace catalog inputs v1, checked as PuppetDB's schema has it (nfv does not keep it). */
function checkCatalogInputs(payload: Record<string, unknown>, invalid: string): void {
  for (const key of Object.keys(payload))
    if (!['certname', 'catalog_uuid', 'producer_timestamp', 'inputs'].includes(key))
      throw badRequest(`${invalid} The payload has an unknown key ${quote(key)}.`);
  if (typeof payload.catalog_uuid !== 'string')
    throw badRequest(`${invalid} The payload's catalog_uuid must be a string.`);
  if (parseInstant(payload.producer_timestamp) === undefined)
    throw badRequest(
      `${invalid} The payload's producer_timestamp ${shown(payload.producer_timestamp)} is not a timestamp.`,
    );
  const inputs = payload.inputs;
  if (
    !Array.isArray(inputs) ||
    !inputs.every((i) => Array.isArray(i) && i.length === 2 && i.every((s) => typeof s === 'string'))
  )
    throw badRequest(`${invalid} The payload's inputs must be a list of [type, name] string pairs.`);
}
