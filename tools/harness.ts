/**
 * What the benchmark (bench.ts) and the soak (soak.ts) share: ports, polls with a deadline, a
 * database of their own on the admin connection, seeded orders, and stopping a child service.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Client } from 'pg';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Polls `probe` until it holds; throws after `timeoutMs` (no sleeps to wait for workers). */
export async function until(what: string, probe: () => Promise<boolean> | boolean, timeoutMs = 30_000, interval = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, interval));
  }
}

/** The same server URL, another database. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Runs `work` on a connection of its own to `url`, closed afterwards. */
export async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Orders of the load's own, straight into the module's table: the paid deliveries pay them. */
export async function seedOrders(db: Client, count: number, name: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO payment_webhooks.orders (id, reference, status, amount_minor, currency, carrier, ship_to, items, created_at, updated_at)
     SELECT gen_random_uuid(), NULL, 'awaiting_payment', 4990, 'EUR', 'default',
            jsonb_build_object('name', $2::text, 'line1', '1 Load St', 'city', 'Paris', 'postalCode', '75001', 'country', 'FR'),
            '[{"sku":"SKU-1","quantity":1}]', now(), now()
       FROM generate_series(1, $1)
     RETURNING id`,
    [count, name],
  );
  return rows.map((r) => r.id);
}

/** SIGTERM, then SIGKILL after 15 s; resolves once the child has exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}
