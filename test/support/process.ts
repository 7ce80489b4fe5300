import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const MAIN = join(__dirname, '..', '..', 'dist', 'src', 'main.js');

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

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The built service as its own process, with exactly `env` (plus PATH). */
export class ServiceProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  private readonly exit: Promise<Exited>;

  constructor(env: Record<string, string>) {
    this.child = spawn(process.execPath, [MAIN], {
      cwd: emptyDir(),
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

/** Polls `probe` until it holds; throws after `timeoutMs` (no sleeps to wait for workers). */
export async function until(what: string, probe: () => Promise<boolean> | boolean, timeoutMs = 30_000, intervalMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
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
