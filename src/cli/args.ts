import { closeSync, openSync, readSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CliExit, EXIT, RemoteEnv } from './context';
import { PAYLOAD_STYLES, type PayloadStyle } from './remote/events';
import { type ListenAddress, parseListenAddress } from './remote/objects-server';

type Options = NonNullable<ParseArgsConfig['options']>;

/** A command's options, strictly: anything unknown or malformed ends the command with exit 2 and its usage. */
export function parseCommandArgs<T extends Options>(
  command: string,
  usage: string,
  args: string[],
  options: T,
): ReturnType<typeof parseArgs<{ args: string[]; options: T; strict: true; allowPositionals: false }>>['values'] {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new CliExit(EXIT.couldNotRun, `${command}: ${(err as Error).message}\n${usage}`);
  }
}

// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/**
 * A secret or token with a control character (a newline from `$(cat file)`) cannot travel in a
 * header; refused here, by name only, so its value never reaches an error message.
 */
export function refuseControlCharacters(command: string, name: string, values: readonly (string | undefined)[]): void {
  if (values.some((v) => v !== undefined && CONTROL_CHARACTER.test(v))) {
    throw new CliExit(EXIT.couldNotRun, `${command}: --${name} must not contain control characters (a trailing newline from a file?)`);
  }
}

/** A requirement met some other way than one option: named by `label` when missing. */
export interface Requirement {
  label: string;
  given: boolean;
}

/** The options a command cannot run without, named in one line when any is missing (then the usage). */
export function requireOptions(command: string, usage: string, values: Record<string, unknown>, names: readonly (string | Requirement)[]): void {
  const missing = names.flatMap((k) => {
    if (typeof k !== 'string') return k.given ? [] : [k.label];
    const v = values[k];
    return v === undefined || v === '' || (Array.isArray(v) && v.length === 0) ? [`--${k}`] : [];
  });
  if (missing.length > 0) throw new CliExit(EXIT.couldNotRun, `${command}: ${missing.join(', ')} required\n${usage}`);
}

/** A whole number in [min, max], written as digits only (no `1e3`, no `0x10`, no `2.0`). */
export function wholeNumber(command: string, name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new CliExit(EXIT.couldNotRun, `${command}: --${name} must be a whole number from ${min} to ${max}, got "${value}"`);
  }
  return n;
}

/**
 * The base URL of a running service (its route prefix included), for the commands that talk to
 * one: http(s), no query or fragment, no credentials (fetch refuses them, and they would be printed
 * with the evidence), and, given the endpoint, not its webhook URL pasted in its place.
 */
export function parseBaseUrl(command: string, name: string, value: string, endpoint?: string): URL {
  const fail = (why: string): never => {
    throw new CliExit(EXIT.couldNotRun, `${command}: --${name} ${why}`);
  };
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return fail('must be an http(s) URL, e.g. http://127.0.0.1:3000');
  if (url.search || url.hash) fail('must be a base URL, without a query or fragment');
  if (url.username || url.password) fail('must not carry a user name or password');
  if (endpoint !== undefined && url.pathname.replace(/\/+$/, '').endsWith(`/webhooks/${encodeURIComponent(endpoint)}`)) {
    fail('is the base URL of the service (with its route prefix), not the webhook URL: drop /webhooks/… and pass the endpoint id with --endpoint');
  }
  return url;
}

/** Signing secrets as given: none empty, none with a control character (never echoed). */
export function checkSecrets(command: string, secrets: readonly string[]): void {
  if (secrets.some((s) => s.length === 0)) throw new CliExit(EXIT.couldNotRun, `${command}: --secret must not be empty`);
  refuseControlCharacters(command, 'secret', secrets);
}

// ---------------------------------------------------------------------------------------------
// Secrets and the admin token, kept off the command line: the arguments of every process are
// readable by every user of the machine (`ps`); a file and the environment are not.

/** The options of a command that signs with an endpoint's secrets. */
export const SECRET_OPTIONS = {
  secret: { type: 'string', multiple: true },
  // Multiple only so that a second one is refused rather than silently replacing the first.
  'secret-file': { type: 'string', multiple: true },
} as const satisfies Options;

/** The option of a command that calls the service's API; ADMIN_TOKEN stands in when it is absent. */
export const ADMIN_TOKEN_OPTION = { 'admin-token': { type: 'string' } } as const satisfies Options;

export interface SecretValues {
  secret?: string[];
  'secret-file'?: string[];
}

/** A file of secrets is a few lines; anything larger (a device, the wrong file) is not read whole. */
export const SECRET_FILE_MAX_BYTES = 64 * 1024;

/** For requireOptions: the secrets given one way or the other. */
export function secretsGiven(values: SecretValues): Requirement {
  return { label: '--secret (or --secret-file)', given: values.secret !== undefined || values['secret-file'] !== undefined };
}

/** For requireOptions: the admin token given as an option, or a non-empty ADMIN_TOKEN. */
export function adminTokenGiven(value: string | undefined, env: RemoteEnv): Requirement {
  return { label: '--admin-token (or ADMIN_TOKEN)', given: value !== undefined || (env.ADMIN_TOKEN ?? '') !== '' };
}

/**
 * The endpoint's secrets, in signing order (the first is the current one): the `--secret` values,
 * or the lines of the `--secret-file`, never both. Undefined when neither was given. Anything
 * wrong ends the command with exit 2, naming the option, the path or the line, never a value.
 */
export function readSecrets(command: string, values: SecretValues): string[] | undefined {
  const files = values['secret-file'];
  if (files === undefined) {
    if (values.secret !== undefined) checkSecrets(command, values.secret);
    return values.secret;
  }
  // Refused rather than combined: a stale --secret left beside the file would sign too, and a run
  // passes as soon as one signature matches, hiding a wrong file (and it is on the command line).
  if (values.secret !== undefined) fail(command, '--secret and --secret-file together: give the secrets one way (--secret-file keeps them out of ps)');
  if (files.length > 1) fail(command, '--secret-file given more than once: one file holds every secret, one a line');
  return readSecretFile(command, files[0]);
}

/**
 * One secret a line, the first the current one (as during a rotation). Each line is trimmed (a
 * Windows `\r`, a byte-order mark, indentation); blank lines and lines starting with `#` are skipped.
 */
export function readSecretFile(command: string, path: string, option = 'secret-file'): string[] {
  const named = `--${option} ${JSON.stringify(path)}`;
  let bytes: Buffer;
  try {
    bytes = readAtMost(path, SECRET_FILE_MAX_BYTES);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unknown error';
    fail(command, `${named}: cannot read it (${READ_ERRORS[code] ?? code})`);
  }
  if (bytes.length > SECRET_FILE_MAX_BYTES) fail(command, `${named} is larger than ${SECRET_FILE_MAX_BYTES / 1024} KiB: not a file of secrets`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    fail(command, `${named} is not UTF-8 text`);
  }
  const secrets: string[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    if (CONTROL_CHARACTER.test(line)) fail(command, `${named}: line ${i + 1} must not contain control characters`);
    secrets.push(line);
  });
  if (secrets.length === 0) fail(command, `${named} holds no ${option === 'secret-file' ? 'secret' : 'key'} (one a line; blank lines and # comments are skipped)`);
  return secrets;
}

/**
 * Up to max + 1 bytes (more than max: too large), from a file or a pipe (`<(vault read …)`): in a
 * loop with a bound, where readFileSync would read /dev/zero, or a wrong path's huge file, whole.
 */
function readAtMost(path: string, max: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(max + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'a directory',
  ENOTDIR: 'a parent is not a directory',
};

/**
 * The admin token: `--admin-token`, else ADMIN_TOKEN (empty counts as absent: `ADMIN_TOKEN= …`
 * runs without one). Undefined when neither; never echoed.
 */
export function readAdminToken(command: string, value: string | undefined, env: RemoteEnv): string | undefined {
  if (value !== undefined) {
    // An explicit empty one is an unset variable (`--admin-token "$TOKEN"`), not a wish for none.
    if (value === '') fail(command, '--admin-token must not be empty');
    refuseControlCharacters(command, 'admin-token', [value]);
    return value;
  }
  const token = env.ADMIN_TOKEN;
  if (token === undefined || token === '') return undefined;
  if (CONTROL_CHARACTER.test(token)) fail(command, 'ADMIN_TOKEN must not contain control characters (a trailing newline from a file?)');
  return token;
}

function fail(command: string, why: string): never {
  throw new CliExit(EXIT.couldNotRun, `${command}: ${why}`);
}

// ---------------------------------------------------------------------------------------------
// Stripe thin event notifications: the kit serves the objects they name (docs/going-live.md#thin-endpoints)

/** The options of a command that can play a Stripe endpoint of thin notifications. */
export const THIN_OPTIONS = {
  'payload-style': { type: 'string' },
  'serve-objects': { type: 'string' },
  // Multiple only so that a second one is refused rather than silently replacing the first.
  'stripe-api-key-file': { type: 'string', multiple: true },
} as const satisfies Options;

export interface ThinValues {
  'payload-style'?: string;
  'serve-objects'?: string;
  'stripe-api-key-file'?: string[];
}

/** With `--payload-style thin`: where the objects are served, and the key a fetch must carry (when given). */
export interface ThinServing {
  address: ListenAddress;
  /** The service's endpoint `apiKey`; without it any bearer is accepted. Never echoed. */
  apiKey?: string;
}

/**
 * `--payload-style` (stripe only, default snapshot) and, for thin, `--serve-objects <host:port>`
 * (required) and `--stripe-api-key-file <path>` (optional). Anything wrong ends the command with
 * exit 2 and one line, never the key.
 */
export function readPayloadStyle(command: string, values: ThinValues, provider: string): { style: PayloadStyle; serving?: ThinServing } {
  const given = values['payload-style'];
  if (given !== undefined && !(PAYLOAD_STYLES as readonly string[]).includes(given)) {
    fail(command, `--payload-style must be one of ${PAYLOAD_STYLES.join(', ')}, got "${given}"`);
  }
  if (given !== undefined && provider !== 'stripe') fail(command, `--payload-style applies to stripe only (thin event notifications are Stripe's), not ${provider}`);
  const style = (given ?? 'snapshot') as PayloadStyle;
  if (style !== 'thin') {
    if (values['serve-objects'] !== undefined) fail(command, '--serve-objects applies to --payload-style thin only');
    if (values['stripe-api-key-file'] !== undefined) fail(command, '--stripe-api-key-file applies to --payload-style thin only');
    return { style };
  }
  const serve = values['serve-objects'];
  if (serve === undefined) {
    fail(command, "--payload-style thin needs --serve-objects <host:port>: the service's thin endpoint reads the objects its notifications name there (its apiBaseUrl http://<host:port>)");
  }
  const address = parseListenAddress(serve);
  if (!address) fail(command, `--serve-objects must be <host>:<port> (e.g. 127.0.0.1:8787, [::1]:8787; a port from 1 to 65535), got "${serve}"`);
  const files = values['stripe-api-key-file'];
  if (files === undefined) return { style, serving: { address } };
  if (files.length > 1) fail(command, '--stripe-api-key-file given more than once: one file holds the key');
  const keys = readSecretFile(command, files[0], 'stripe-api-key-file');
  if (keys.length > 1) fail(command, `--stripe-api-key-file ${JSON.stringify(files[0])} holds ${keys.length} keys: one key, the endpoint's apiKey`);
  return { style, serving: { address, apiKey: keys[0] } };
}
