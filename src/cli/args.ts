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

/** `--url …/webhooks/<endpoint>`: the webhook URL pasted where the base URL goes. */
export function isWebhookUrl(url: URL, endpoint: string): boolean {
  return url.pathname.replace(/\/+$/, '').endsWith(`/webhooks/${encodeURIComponent(endpoint)}`);
}
