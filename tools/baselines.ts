/**
 * What the benchmark's two baselines share with it: their tables, the orders the reference
 * receiver's loads pay, and the Standard Webhooks check both run on every delivery.
 *
 * - The reference receiver (tools/reference-receiver.ts) is the design issue 24 measures the
 *   module against: plain NestJS + pg, one transaction per delivery, a relay polling the outbox.
 * - The ceiling (tools/ceiling-receiver.ts) is node:http + pg doing only the HMAC and a batched
 *   INSERT … ON CONFLICT: no framework, no processing, the most this machine takes in.
 *
 * Each keeps its tables in a schema of its own in the bench's database (which the bench creates
 * fresh for every system), so nothing of the module's schema is read or written.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Client } from 'pg';

/**
 * The reference's tables. `orders` holds what the module's orders hold for a shipment (address,
 * items, amount); `inbox` is keyed by the sender's message id, which is what makes a redelivery a
 * duplicate; `outbox` rows are what the relay sends, their id the carrier's Idempotency-Key.
 */
export const REFERENCE_SCHEMA = `
  CREATE SCHEMA IF NOT EXISTS ref;
  CREATE TABLE IF NOT EXISTS ref.orders (
    id uuid PRIMARY KEY,
    status text NOT NULL,
    amount_minor integer NOT NULL,
    currency text NOT NULL,
    ship_to jsonb NOT NULL,
    items jsonb NOT NULL,
    paid_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE IF NOT EXISTS ref.inbox (
    message_id text PRIMARY KEY,
    endpoint text NOT NULL,
    event_type text NOT NULL,
    payload jsonb NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    processed_at timestamptz
  );
  CREATE TABLE IF NOT EXISTS ref.outbox (
    id bigserial PRIMARY KEY,
    order_id uuid NOT NULL,
    payload jsonb NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    last_error text,
    created_at timestamptz NOT NULL DEFAULT now(),
    dispatched_at timestamptz
  );
  -- The relay's claim reads only what is still to send; a partial index keeps that read small
  -- however many rows have been dispatched.
  CREATE INDEX IF NOT EXISTS outbox_pending_idx ON ref.outbox (id) WHERE dispatched_at IS NULL;
`;

/** The ceiling's one table: an inbox row per message id, the payload kept for a later processing. */
export const CEILING_SCHEMA = `
  CREATE SCHEMA IF NOT EXISTS ceiling;
  CREATE TABLE IF NOT EXISTS ceiling.inbox (
    message_id text PRIMARY KEY,
    endpoint text NOT NULL,
    payload jsonb NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
  );
`;

/**
 * Orders for the reference's loads, the same as the harness seeds into the module's table (4990
 * EUR, awaiting payment, one address, one item), so both pay and ship the same kind of order.
 */
export async function seedReferenceOrders(db: Client, count: number, name: string): Promise<string[]> {
  await db.query(REFERENCE_SCHEMA);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO ref.orders (id, status, amount_minor, currency, ship_to, items)
     SELECT gen_random_uuid(), 'awaiting_payment', 4990, 'EUR',
            jsonb_build_object('name', $2::text, 'line1', '1 Load St', 'city', 'Paris', 'postalCode', '75001', 'country', 'FR'),
            '[{"sku":"SKU-1","quantity":1}]'
       FROM generate_series(1, $1)
     RETURNING id`,
    [count, name],
  );
  return rows.map((r) => r.id);
}

/** How far a delivery's timestamp may be from now, as Standard Webhooks recommends (replays). */
const TOLERANCE_SECONDS = 5 * 60;

/**
 * Checks a Standard Webhooks delivery (what the bench signs with `signedHeaders('standard', …)`):
 * HMAC-SHA256 of `id.timestamp.body` with the base64 key after `whsec_`, any `v1,` entry of the
 * space-separated `webhook-signature` matching, compared in constant time. Returns the message
 * id when authentic, undefined otherwise.
 */
export function verifyStandardWebhook(
  key: Buffer,
  header: (name: string) => string | undefined,
  body: Buffer,
  nowSeconds = Math.floor(Date.now() / 1000),
): string | undefined {
  const id = header('webhook-id');
  const timestamp = header('webhook-timestamp');
  const signatures = header('webhook-signature');
  if (!id || !timestamp || !signatures || !/^\d{1,12}$/.test(timestamp)) return undefined;
  if (Math.abs(nowSeconds - Number(timestamp)) > TOLERANCE_SECONDS) return undefined;
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  for (const entry of signatures.split(' ')) {
    if (!entry.startsWith('v1,')) continue;
    const given = Buffer.from(entry.slice(3), 'base64');
    // timingSafeEqual throws on a length mismatch; a wrong length is simply not a match.
    if (given.length === expected.length && timingSafeEqual(given, expected)) return id;
  }
  return undefined;
}

/** The signing key of a `whsec_` secret. */
export function standardKey(secret: string): Buffer {
  if (!secret.startsWith('whsec_')) throw new Error('the secret must be a whsec_ Standard Webhooks secret');
  return Buffer.from(secret.slice('whsec_'.length), 'base64');
}
