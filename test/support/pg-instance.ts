import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './process';

/** Where the PostgreSQL binaries are: PG_BIN, else the Debian path of 15, else PATH. */
function pgBin(name: string): string {
  const dirs = [process.env.PG_BIN, '/usr/lib/postgresql/15/bin'].filter((d): d is string => !!d);
  for (const dir of dirs) if (existsSync(join(dir, name))) return join(dir, name);
  return name;
}

/** initdb and the postmaster refuse to run as root: a root test runs them as the `postgres` OS user. */
const AS_ROOT = typeof process.getuid === 'function' && process.getuid() === 0;
const OS_USER = process.env.PG_OS_USER ?? 'postgres';

function osUserIds(): { uid: number; gid: number } {
  const out = spawnSync('id', ['-u', OS_USER], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', OS_USER], { encoding: 'utf8' });
  if (out.status !== 0 || gid.status !== 0) throw new Error(`running as root, and there is no OS user ${OS_USER} to run PostgreSQL as`);
  return { uid: Number(out.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Runs a PostgreSQL tool to its end (as the OS user `postgres` when the test runs as root). */
function run(tool: string, args: string[], timeoutMs = 60_000): Promise<{ code: number | null; output: string }> {
  const [cmd, argv] = AS_ROOT ? ['runuser', ['-u', OS_USER, '--', pgBin(tool), ...args]] : [pgBin(tool), args];
  return new Promise((resolve, reject) => {
    // Detached, and its output to a pipe we drain: pg_ctl's postmaster keeps no handle on the test.
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${tool} ${args.join(' ')} still running after ${timeoutMs} ms: ${output}`));
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** Every instance not yet removed: killed and deleted when the test process exits, however it exits. */
const live = new Set<PgInstance>();
process.once('exit', () => {
  for (const pg of live) pg.removeSync();
});

/**
 * A PostgreSQL of the test's own: a cluster initialised into a temporary folder (trust, user
 * `postgres`, fsync off but every commit written before it returns), listening on 127.0.0.1 at a
 * free port and on a socket in that folder.
 * The test can stop it as a crash would (`stop('immediate')`), start it again on the same data and
 * port, freeze it (SIGSTOP to the postmaster and every backend: connections are accepted by the
 * kernel and then never answered, running statements never finish) and thaw it. `remove()` stops it
 * and deletes the folder; call it in afterAll (an exit hook kills what a failed run left).
 */
export class PgInstance {
  private frozen = false;

  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  /** Initialises the cluster and starts it. */
  static async create(): Promise<PgInstance> {
    const dir = mkdtempSync(join(tmpdir(), 'pw-pg-'));
    const pg = new PgInstance(dir, await freePort());
    live.add(pg);
    try {
      if (AS_ROOT) {
        const { uid, gid } = osUserIds();
        chownSync(dir, uid, gid);
      }
      const init = await run('initdb', ['-D', pg.dataDir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync']);
      if (init.code !== 0) throw new Error(`initdb failed (${init.code}): ${init.output}`);
      await pg.start();
      return pg;
    } catch (err) {
      await pg.remove();
      throw err;
    }
  }

  get dataDir(): string {
    return join(this.dir, 'data');
  }

  /** The superuser's URL on the `postgres` database. */
  get url(): string {
    return this.urlFor('postgres');
  }

  urlFor(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** The postmaster's pid while it runs (the first line of postmaster.pid), else undefined. */
  get postmasterPid(): number | undefined {
    try {
      const pid = Number(readFileSync(join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      if (!Number.isInteger(pid) || pid <= 0) return undefined;
      process.kill(pid, 0);
      return pid;
    } catch {
      return undefined;
    }
  }

  get running(): boolean {
    return this.postmasterPid !== undefined;
  }

  /** Starts the cluster (same data, same port) and waits until it accepts connections. */
  async start(): Promise<void> {
    if (this.running) return;
    const options = [
      `-p ${this.port}`,
      `-k ${this.dir}`,
      '-c listen_addresses=127.0.0.1',
      // No fsync: only the server is ever crashed here, never the machine, so the OS keeps what
      // was written. But commits do wait for their WAL write (synchronous_commit stays on): an
      // immediate stop would otherwise lose transactions the service has already acknowledged.
      '-c fsync=off',
      '-c max_connections=200',
    ].join(' ');
    const res = await run('pg_ctl', ['start', '-w', '-t', '60', '-D', this.dataDir, '-l', join(this.dir, 'postgres.log'), '-o', options]);
    if (res.code !== 0) throw new Error(`pg_ctl start failed (${res.code}): ${res.output}\n${this.log()}`);
    const deadline = Date.now() + 10_000;
    while (!(await reachable(this.port))) {
      if (Date.now() > deadline) throw new Error(`PostgreSQL did not listen on ${this.port}\n${this.log()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * Stops the cluster: `immediate` is a crash as far as clients see (every connection cut at once,
   * recovery at the next start); `fast` a clean shutdown. A frozen cluster is thawed first.
   */
  async stop(mode: 'immediate' | 'fast' = 'immediate'): Promise<void> {
    if (!this.running) return;
    if (this.frozen) this.thaw();
    const res = await run('pg_ctl', ['stop', '-w', '-t', '30', '-m', mode, '-D', this.dataDir]);
    if (res.code !== 0 && this.running) throw new Error(`pg_ctl stop failed (${res.code}): ${res.output}`);
  }

  /**
   * SIGSTOP to the postmaster and all its children. The postmaster stopped: the kernel still
   * completes a new TCP connection (the listen backlog), but its startup packet is never answered,
   * so a new connection hangs. The backends stopped: a statement on an open connection hangs. The
   * postmaster's process group holds them all (pg_ctl starts it with setsid, and every backend and
   * auxiliary process is forked from it); the children are signalled by pid too, should one have
   * left the group.
   */
  freeze(): void {
    this.signalAll('SIGSTOP');
    this.frozen = true;
  }

  /** SIGCONT to the same processes. */
  thaw(): void {
    this.signalAll('SIGCONT');
    this.frozen = false;
  }

  /** The pids of the postmaster and its children, as /proc reports them. */
  processes(): number[] {
    const pm = this.postmasterPid;
    if (pm === undefined) return [];
    const pids = [pm];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        // stat: "pid (comm) state ppid ..."; comm may hold spaces, so read after the last ')'.
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === pm) pids.push(Number(entry));
      } catch {
        // gone meanwhile
      }
    }
    return pids;
  }

  /** Each process's state letter (`T` stopped, `S` sleeping, `R` running…). */
  states(): Map<number, string> {
    const out = new Map<number, string>();
    for (const pid of this.processes()) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        out.set(pid, stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]);
      } catch {
        // gone meanwhile
      }
    }
    return out;
  }

  /** The server's log so far (for a failure's message). */
  log(): string {
    try {
      return readFileSync(join(this.dir, 'postgres.log'), 'utf8').slice(-4000);
    } catch {
      return '';
    }
  }

  /** Stops the cluster and deletes its folder. */
  async remove(): Promise<void> {
    try {
      await this.stop('immediate');
    } catch {
      // killed below
    }
    this.removeSync();
  }

  /** What an exit hook can do: SIGCONT and SIGKILL to every process of the cluster, and the folder deleted. */
  removeSync(): void {
    const pm = this.postmasterPid;
    if (pm !== undefined) {
      for (const signal of ['SIGCONT', 'SIGKILL'] as const) {
        for (const pid of this.processes()) kill(pid, signal);
        kill(-pm, signal);
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
    live.delete(this);
  }

  private signalAll(signal: NodeJS.Signals): void {
    const pm = this.postmasterPid;
    if (pm === undefined) throw new Error('PostgreSQL is not running');
    kill(-pm, signal);
    for (const pid of this.processes()) kill(pid, signal);
  }
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // not there (any more), or no such group
  }
}

function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
