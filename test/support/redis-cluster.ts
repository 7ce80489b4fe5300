import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A Redis Cluster of the test's own: `size` masters (no replicas) started as child processes in a
 * temporary directory, on free ports whose cluster bus ports (port + 10000) are free too.
 */
export class LocalRedisCluster {
  readonly ports: number[] = [];
  private readonly children: ChildProcess[] = [];
  private dir: string | undefined;
  private output = '';

  constructor(private readonly size = 3) {}

  /** `redis://127.0.0.1:P1`, the first node: a seed is enough for the client to find the others. */
  get seedUrl(): string {
    return `redis://127.0.0.1:${this.ports[0]}`;
  }

  async start(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    this.dir = mkdtempSync(join(tmpdir(), 'pw-redis-cluster-'));
    for (let i = 0; i < this.size; i++) this.ports.push(await freeClusterPort(this.ports));
    for (const port of this.ports) {
      const child = spawn(
        'redis-server',
        [
          '--port', String(port),
          '--bind', '127.0.0.1',
          '--cluster-enabled', 'yes',
          '--cluster-config-file', join(this.dir, `nodes-${port}.conf`),
          '--save', '',
          '--appendonly', 'no',
          '--daemonize', 'no',
        ],
        { cwd: this.dir, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      child.stdout!.on('data', (d) => (this.output += d));
      child.stderr!.on('data', (d) => (this.output += d));
      this.children.push(child);
    }
    for (const port of this.ports) {
      await until(`redis-server on ${port}`, deadline, async () => (await cli(['-p', String(port), 'ping'])).stdout.trim() === 'PONG', () => this.output);
    }
    const created = await cli([
      '--cluster', 'create',
      ...this.ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas', '0',
      '--cluster-yes',
    ]);
    if (created.code !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    for (const port of this.ports) {
      await until(
        `cluster_state:ok on ${port}`,
        deadline,
        async () => /cluster_state:ok/.test((await cli(['-p', String(port), 'cluster', 'info'])).stdout),
        () => this.output,
      );
    }
  }

  /** Stops every node (and waits for each to exit), then removes the directory. */
  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    this.children.length = 0;
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }
}

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('redis-cli', args, { timeout: 10_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

async function until(what: string, deadline: number, probe: () => Promise<boolean>, output: () => string): Promise<void> {
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; redis-server said: ${output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function listens(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free port under 55535 whose bus port (port + 10000) is free too, and not one already taken. */
async function freeClusterPort(taken: number[]): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if (taken.some((p) => Math.abs(p - port) < 2 || Math.abs(p + 10_000 - port) < 2 || Math.abs(p - 10_000 - port) < 2)) continue;
    if ((await listens(port)) && (await listens(port + 10_000))) return port;
  }
  throw new Error('no free port pair for a cluster node');
}
