#!/usr/bin/env node
/**
 * `payment-webhooks`: the module's command line, reading the environment of docs/configuration.md (a local
 * `.env` fills what the environment leaves unset). Exit code 0 success, 1 failure, 2 could not run
 * (bad arguments, configuration, database unreachable), each with one line saying why.
 */
import 'reflect-metadata';
import { CliExit, EXIT, runCli } from './cli';

// A reader that went away (`… | head`) ends the command quietly, as any Unix tool.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(EXIT.failure);
    throw err;
  });
}

runCli(process.argv.slice(2), process.env).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof CliExit) {
      process.stderr.write(`payment-webhooks: ${err.message}\n`);
      process.exit(err.code);
    }
    process.stderr.write(`payment-webhooks: failed: ${(err as Error)?.message ?? String(err)}\n`);
    process.exit(EXIT.failure);
  },
);
