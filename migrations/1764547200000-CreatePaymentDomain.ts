import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreatePaymentDomain1764547200000 implements MigrationInterface {
  name = 'CreatePaymentDomain1764547200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE orders (
        id           uuid        PRIMARY KEY,
        reference    text        UNIQUE,
        status       text        NOT NULL
          CHECK (status IN ('awaiting_payment', 'paid', 'fulfilled', 'canceled', 'refunded')),
        amount_minor bigint      NOT NULL CHECK (amount_minor >= 0),
        currency     text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
        carrier      text        NOT NULL,
        ship_to      jsonb       NOT NULL,
        items        jsonb       NOT NULL,
        paid_via     jsonb,
        paid_at      timestamptz,
        created_at   timestamptz NOT NULL,
        updated_at   timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX orders_status_idx ON orders (status, id)`);

    await q.query(`
      CREATE TABLE payments (
        id                  uuid        PRIMARY KEY,
        order_id            uuid        NOT NULL REFERENCES orders (id),
        provider            text        NOT NULL,
        provider_payment_id text        NOT NULL,
        merchant_account_id text        NOT NULL,
        status              text        NOT NULL CHECK (status IN ('pending', 'processing', 'authorized',
          'succeeded', 'partially_refunded', 'refunded', 'disputed', 'dispute_lost', 'failed', 'canceled', 'expired')),
        amount_minor        bigint      NOT NULL CHECK (amount_minor >= 0),
        currency            text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
        refunded_minor      bigint      NOT NULL DEFAULT 0 CHECK (refunded_minor >= 0 AND refunded_minor <= amount_minor),
        dispute_outcome     text        CHECK (dispute_outcome IN ('won', 'lost')),
        created_at          timestamptz NOT NULL,
        updated_at          timestamptz NOT NULL,
        CONSTRAINT payments_provider_payment_key UNIQUE (provider, merchant_account_id, provider_payment_id)
      )`);
    await q.query(`CREATE INDEX payments_order_idx ON payments (order_id, id)`);

    await q.query(`
      CREATE TABLE fulfillments (
        id            uuid        PRIMARY KEY,
        order_id      uuid        NOT NULL UNIQUE REFERENCES orders (id),
        status        text        NOT NULL CHECK (status IN ('requested', 'dispatched', 'failed')),
        carrier       text        NOT NULL,
        shipment_id   text,
        last_error    text,
        created_at    timestamptz NOT NULL,
        updated_at    timestamptz NOT NULL,
        dispatched_at timestamptz
      )`);

    await q.query(`
      CREATE TABLE outbox_message (
        id              uuid        PRIMARY KEY,
        type            text        NOT NULL,
        payload         jsonb       NOT NULL,
        idempotency_key text        NOT NULL UNIQUE,
        status          text        NOT NULL CHECK (status IN ('pending', 'dispatched', 'dead')),
        attempts        integer     NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        last_error      text,
        created_at      timestamptz NOT NULL DEFAULT now(),
        dispatched_at   timestamptz
      )`);
    // The relay's scan: pending messages due, oldest first.
    await q.query(`CREATE INDEX outbox_message_pending_idx ON outbox_message (next_attempt_at) WHERE status = 'pending'`);

    await q.query(`
      CREATE TABLE idempotency_keys (
        scope           text        NOT NULL,
        key             text        NOT NULL,
        request_hash    text        NOT NULL,
        response_status integer,
        response_body   text,
        created_at      timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (scope, key)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE idempotency_keys`);
    await q.query(`DROP TABLE outbox_message`);
    await q.query(`DROP TABLE fulfillments`);
    await q.query(`DROP TABLE payments`);
    await q.query(`DROP TABLE orders`);
  }
}
