/**
 * Issue 24's "cost as the work grows": fills a migrated database with the history of a busy
 * service, in the database itself (INSERT … SELECT over generate_series: no webhook, no round trip
 * per row), so the benchmark can measure the same loads on it as on an empty one.
 *
 * - `deliveries` inbox rows, final (`processed`), received over the last 120 days, one a second per
 *   row back from now; with the default 90-day retention the oldest quarter is expired (so a purge
 *   has work), and `expired` says how many. Ids are UUIDv7 of their received_at, as the service's.
 * - `deliveries / 10` orders, fulfilled, each with its succeeded payment.
 * Rows are written in chunks of 500,000, each its own statement (a chunk's WAL, not the whole),
 * then vacuumed, analysed and checkpointed, as a service's tables are after months of work.
 */
import type { Client } from 'pg';

const CHUNK = 500_000;
const SCHEMA = 'payment_webhooks';
/** The seeded history spans this many days back from now; the retention window is 90 days. */
const SPAN_DAYS = 120;

export interface Seeded {
  deliveries: number;
  orders: number;
  /** Inbox rows older than 90 days (the default retention window). */
  expired: number;
  seconds: number;
  /** The database's size after seeding (pg_database_size), and that of the inbox with its indexes. */
  databaseBytes: number;
  inboxBytes: number;
}

export async function seedHistory(db: Client, deliveries: number, account: string, log: (line: string) => void = () => undefined): Promise<Seeded> {
  const started = performance.now();
  const orders = Math.floor(deliveries / 10);
  // One row a few seconds apart, the newest now, the oldest SPAN_DAYS ago.
  const stepMs = (SPAN_DAYS * 86_400_000) / Math.max(1, deliveries);
  await db.query(`SET search_path TO ${SCHEMA}`);
  for (let from = 1; from <= deliveries; from += CHUNK) {
    const to = Math.min(deliveries, from + CHUNK - 1);
    await db.query(
      `INSERT INTO webhook_inbox (id, endpoint_id, provider, merchant_account_id, event_id, event_type, resource_id,
                                  headers, body, status, outcome, attempts, received_at, processed_at)
       SELECT (lpad(to_hex(t.ms), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
              'bench', 'standard', $2, 'msg_seed_' || g, 'payment.succeeded', 'pay_seed_' || g,
              '{"content-type":"application/json","webhook-id":"seed"}'::jsonb,
              '{"type":"payment.succeeded","timestamp":"' || to_char(t.at, 'YYYY-MM-DD"T"HH24:MI:SS"Z"') ||
                '","data":{"payment_id":"pay_seed_' || g || '","order_id":"00000000-0000-0000-0000-000000000000","amount":4990,"currency":"EUR","account_id":"' || $2 || '"}}',
              'processed', 'applied', 1, t.at, t.at
         FROM generate_series($1::bigint, $3::bigint) AS g,
              LATERAL (SELECT md5(g::text) AS h) AS m,
              LATERAL (SELECT now() - make_interval(secs => (g * $4::float8) / 1000) AS at) AS a,
              LATERAL (SELECT a.at, (extract(epoch FROM a.at) * 1000)::bigint AS ms) AS t`,
      [from, account, to, stepMs],
    );
    log(`  seeded ${to} of ${deliveries} deliveries (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  }
  for (let from = 1; from <= orders; from += CHUNK) {
    const to = Math.min(orders, from + CHUNK - 1);
    await db.query(
      `WITH o AS (
         INSERT INTO orders (id, reference, status, amount_minor, currency, carrier, ship_to, items, paid_via, paid_at, created_at, updated_at, merchant_account_id)
         SELECT gen_random_uuid(), 'seed-' || g, 'fulfilled', 4990, 'EUR', 'default',
                '{"name":"Seed","line1":"1 Seed St","city":"Paris","postalCode":"75001","country":"FR"}'::jsonb,
                '[{"sku":"SKU-1","quantity":1}]'::jsonb, NULL, now(), now(), now(), $2
           FROM generate_series($1::bigint, $3::bigint) AS g
         RETURNING id, reference)
       INSERT INTO payments (id, order_id, provider, provider_payment_id, merchant_account_id, status, amount_minor, currency, created_at, updated_at)
       SELECT gen_random_uuid(), o.id, 'standard', 'pay_' || o.reference, $2, 'succeeded', 4990, 'EUR', now(), now() FROM o`,
      [from, account, to],
    );
    log(`  seeded ${to} of ${orders} orders with their payments (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  }
  await db.query(`VACUUM ANALYZE webhook_inbox`);
  await db.query(`VACUUM ANALYZE orders`);
  await db.query(`VACUUM ANALYZE payments`);
  // The seeding's gigabytes written out now, not by the checkpointer and the kernel during the
  // loads (which slowed even `/health`, a route that reads nothing, by two fifths): the loads
  // measure a database's size, not the minutes after a bulk load.
  // CHECKPOINT needs a superuser or pg_checkpoint: without it, say so and go on.
  await db
    .query(`CHECKPOINT`)
    .catch((err: Error) => process.stderr.write(`no CHECKPOINT after seeding (${err.message}): the first loads share the machine with its writes\n`));
  const [{ expired }] = (
    await db.query<{ expired: number }>(`SELECT count(*)::int AS expired FROM webhook_inbox WHERE received_at < now() - interval '90 days' AND event_id LIKE 'msg_seed_%'`)
  ).rows;
  const [sizes] = (
    await db.query<{ database: string; inbox: string }>(`SELECT pg_database_size(current_database())::text AS database, pg_total_relation_size('webhook_inbox')::text AS inbox`)
  ).rows;
  await db.query(`RESET search_path`);
  return { deliveries, orders, expired, seconds: (performance.now() - started) / 1000, databaseBytes: Number(sizes.database), inboxBytes: Number(sizes.inbox) };
}
