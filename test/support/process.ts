import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Ports and polls with a deadline: the same helpers the benchmark and the soak use.
export { freePort, until } from '../../tools/harness';

export const MAIN = join(__dirname, '..', '..', 'dist', 'src', 'main.js');
/** The built `payment-webhooks` command. */
export const CLI = join(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');

export interface Exited {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A directory with no `.env`, so a developer's own file never leaks into a test. */
export function emptyDir(): string {
  return mkdtempSync(join(tmpdir(), 'pw-e2e-'));
}

/** The built service as its own process, with exactly `env` (plus PATH). */
export class ServiceProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  private readonly exit: Promise<Exited>;

  /** `cwd`: a directory of the test's own (a `.env` in it); by default an empty one. */
  constructor(env: Record<string, string>, cwd: string = emptyDir()) {
    this.child = spawn(process.execPath, [MAIN], {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (d) => (this.stdout += d));
    this.child.stderr!.on('data', (d) => (this.stderr += d));
    this.exit = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => resolve({ code, signal, stdout: this.stdout, stderr: this.stderr })),
    );
  }

  exited(timeoutMs = 20_000): Promise<Exited> {
    return Promise.race([
      this.exit,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`process still running after ${timeoutMs} ms`)), timeoutMs).unref(),
      ),
    ]);
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    if (this.child.exitCode === null) this.child.kill(signal);
  }
}

/** Polls `url` until it answers 200 or the process dies. */
export async function waitForHttp(service: ServiceProcess, url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (service.child.exitCode !== null) throw new Error(`service exited: ${service.stderr}`);
    const ok = await fetch(url).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no answer at ${url} after ${timeoutMs} ms; stderr: ${service.stderr}`);
}

/**
 * One JSON request to the module's API of a built service (a port on 127.0.0.1, or a base URL),
 * with the admin token: `{ status, body }`.
 */
export async function api(target: number | string, token: string, method: string, path: string, body?: unknown) {
  const base = typeof target === 'number' ? `http://127.0.0.1:${target}` : target;
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** What a run of the command printed, and how it ended. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the built `payment-webhooks` command with exactly `env` (plus PATH), in a directory with no
 * `.env`. Async, so a stub or proxy this process serves can answer it meanwhile.
 */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: emptyDir(), env: { PATH: process.env.PATH ?? '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A suite's teardown of its service processes: SIGTERM, up to 10 s each to exit, then SIGKILL. */
export async function stopProcesses(processes: ServiceProcess[]): Promise<void> {
  for (const p of processes) p.kill('SIGTERM');
  await Promise.all(processes.map((p) => p.exited(10_000).catch(() => p.kill('SIGKILL'))));
  for (const p of processes) p.kill('SIGKILL');
}

/** A run of the built command that is still going: its process, to look at, and its end. */
export interface StartedCli {
  child: ChildProcess;
  exited: Promise<CliRun>;
}

/** As runCli, but returns at once with the process, to look at it while it runs (`/proc/<pid>/cmdline`). */
export function startCli(args: string[], env: Record<string, string> = {}): StartedCli {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: emptyDir(), env: { PATH: process.env.PATH ?? '', ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<CliRun>((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
  return { child, exited };
}

/** A process's command line as any user of the machine sees it (`ps`, /proc), its arguments joined by spaces. */
export function commandLineOf(pid: number): string {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
}
