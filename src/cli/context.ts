import type { DataSource } from 'typeorm';
import type { StandaloneConfig } from '../config/env';

export const EXIT = { ok: 0, failure: 1, couldNotRun: 2 } as const;

/** Ends the command with this code and one line on stderr. */
export class CliExit extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * All the commands that talk to a running service read of the environment: the admin token, so it
 * need not be an argument (`ps` shows every process's arguments to every user; its environment
 * only to its own user). Never from a `.env`: those commands read none of the service's files.
 */
export interface RemoteEnv {
  readonly ADMIN_TOKEN?: string;
}

/** What a command gets: its arguments, the validated environment, and a way to open the database. */
export interface CliContext {
  args: string[];
  /** ADMIN_TOKEN as the command was started with, read when asked. */
  readonly remoteEnv: RemoteEnv;
  /** The validated environment (docs/configuration.md), read on first use (a configuration error ends the command with exit 2). */
  readonly config: StandaloneConfig;
  out: (line: string) => void;
  /** Opens the module's data source; an unreachable database ends the command with exit 2. */
  connect(): Promise<DataSource>;
}

export interface CliCommand {
  summary: string;
  /** `false`: the command does not read the service's environment (it talks to a running service over HTTP). */
  environment?: false;
  /**
   * The command acts on one database, which must be named (`DATABASE_URL`, or `--database-url`):
   * without it the command could not run (exit 2), since a gate that checked a default database
   * would pass for the wrong reason.
   */
  needsDatabaseUrl?: true;
  usage: string;
  run(ctx: CliContext): Promise<number>;
}

/** host:port/name, never the password. */
export function describeDatabase(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || 5432}${u.pathname}`;
  } catch {
    return '(unparseable URL)';
  }
}
