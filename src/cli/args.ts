import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CliExit, EXIT } from './context';

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

/**
 * A secret or token with a control character (a newline from `$(cat file)`) cannot travel in a
 * header; refused here, by name only, so its value never reaches an error message.
 */
export function refuseControlCharacters(command: string, name: string, values: readonly (string | undefined)[]): void {
  // eslint-disable-next-line no-control-regex
  if (values.some((v) => v !== undefined && /[\u0000-\u001f\u007f]/.test(v))) {
    throw new CliExit(EXIT.couldNotRun, `${command}: --${name} must not contain control characters (a trailing newline from a file?)`);
  }
}

/** The options a command cannot run without, named in one line when any is missing (then the usage). */
export function requireOptions(command: string, usage: string, values: Record<string, unknown>, names: readonly string[]): void {
  const missing = names.filter((k) => {
    const v = values[k];
    return v === undefined || v === '' || (Array.isArray(v) && v.length === 0);
  });
  if (missing.length > 0) throw new CliExit(EXIT.couldNotRun, `${command}: ${missing.map((k) => `--${k}`).join(', ')} required\n${usage}`);
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
