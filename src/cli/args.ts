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
