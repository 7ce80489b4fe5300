import { ChildProcess, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { Client } from 'pg';

/**
 * What the e2e specs that install the packed tarball into a project of their own share (the
 * example host, a fresh `nest new` project): npm runs, the built project as its own process, and
 * a clean-up that runs every step whatever failed before.
 */
export { withDatabase } from '../../tools/harness';

const exec = promisify(execFile);

/**
 * The environment of an npm run: ours without npm's own `npm_*` variables (when Jest runs under
 * `npm test` they name the repository as the project, and the project is not inside it).
 */
export function npmEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== 'INIT_CWD'));
  return { ...env, npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_prefer_offline: 'true' };
}

/** Runs a command in `cwd` with npmEnv(); resolves with its stdout, or fails with everything it printed. */
export async function runIn(command: string, args: string[], cwd: string, timeoutMs: number): Promise<string> {
  try {
    const { stdout } = await exec(command, args, { cwd, env: npmEnv(), timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} (in ${cwd}) failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

/** A built project (`node dist/main.js` in `cwd`) as its own process, with exactly `env` (plus PATH). */
export class ProjectProcess {
  readonly child: ChildProcess;
  output = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(cwd: string, env: Record<string, string>, children?: Set<ChildProcess>) {
    this.child = spawn(process.execPath, ['dist/main.js'], { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children?.add(this.child);
    this.child.stdout!.on('data', (d) => (this.output += d));
    this.child.stderr!.on('data', (d) => (this.output += d));
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
}

/** Runs every step in turn, whatever failed before it; then throws the first error. */
export async function cleanUp(steps: Array<() => unknown>): Promise<void> {
  const errors: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (err) {
      errors.push(err);
    }
  }
  if (errors.length > 0) throw errors[0];
}

/** Kills every child still running. */
export function killAll(children: Iterable<ChildProcess>): void {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** Runs one statement on the admin connection `adminUrl` (CREATE or DROP DATABASE). */
async function onAdmin(adminUrl: string, statement: string): Promise<void> {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(statement);
  } finally {
    await admin.end();
  }
}

/** Creates a database through the admin connection `adminUrl`. */
export function createDatabase(adminUrl: string, name: string): Promise<void> {
  return onAdmin(adminUrl, `CREATE DATABASE "${name}"`);
}

/** Drops a database through the admin connection `adminUrl`. */
export function dropDatabase(adminUrl: string, name: string): Promise<void> {
  return onAdmin(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}

/** Deletes the Redis keys matching `pattern` (a run's queue prefix). */
export async function deleteKeys(redisUrl: string, pattern: string): Promise<void> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const keys = await redis.keys(pattern);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

/** Closes an HTTP server of the test (a stub), its open connections included. */
export function closeServer(server: { close(cb: () => void): unknown; closeAllConnections?(): void } | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (!server) return resolve();
    server.closeAllConnections?.();
    server.close(() => resolve());
  });
}
