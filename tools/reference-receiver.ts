/**
 * The reference design of issue 24: what a competent NestJS team would write instead of using the
 * module, run by the benchmark beside it on the same load, the same carrier simulator and the
 * same database server. Plain NestJS (Express) + `pg`, the transactional-outbox pattern:
 *
 *   POST /webhooks/:endpoint   verify the Standard Webhooks HMAC (timingSafeEqual), then ONE
 *                              transaction: inbox row by message id (ON CONFLICT DO NOTHING), the
 *                              order awaiting payment set to paid, an outbox row; commit; answer
 *                              {"status":"accepted"|"duplicate","eventId"}.
 *   a relay                    polls the outbox every REF_RELAY_POLL_MS (100 ms by default: the
 *                              pattern as documented polls), claims up to REF_RELAY_BATCH rows
 *                              with FOR UPDATE SKIP LOCKED, calls the carrier's POST /shipments
 *                              with Idempotency-Key = the outbox row's id, marks them dispatched,
 *                              commits. A full batch is followed at once by the next claim, so a
 *                              backlog drains at the carrier's pace rather than batch/interval.
 *   GET /health, /health/ready 200 (ready once the database answers).
 *
 * Environment: DATABASE_URL, PORT, CARRIER_URL, WEBHOOK_SECRET (a `whsec_` secret; the endpoint id
 * is `bench`), REF_POOL_SIZE (20), REF_RELAY_POLL_MS (100), REF_RELAY_BATCH (100).
 *
 * Deliberately not here (the module has them, the comparison is of the hot path): retries with
 * backoff and dead letters (a failed call stays pending and is retried at the next poll), other
 * providers, metrics, logs per delivery.
 */
import 'reflect-metadata';
import {
  BadRequestException,
  Controller,
  Get,
  HttpCode,
  Injectable,
  Logger,
  Module,
  NotFoundException,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  BeforeApplicationShutdown,
  Param,
  Post,
  Req,
  ServiceUnavailableException,
  UnauthorizedException,
} from '@nestjs/common';
import type { RawBodyRequest } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Request } from 'express';
import { Pool } from 'pg';
import { REFERENCE_SCHEMA, standardKey, verifyStandardWebhook } from './baselines';

const ENDPOINT = 'bench';
const POLL_MS = Number(process.env.REF_RELAY_POLL_MS ?? 100);
const BATCH = Number(process.env.REF_RELAY_BATCH ?? 100);
const CARRIER_URL = process.env.CARRIER_URL ?? 'http://127.0.0.1:4010';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The pool is a provider so that the controller and the relay share it, and it closes last. */
@Injectable()
class Database implements OnApplicationShutdown {
  readonly pool = new Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.REF_POOL_SIZE ?? 20) });
  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}

interface PaidEvent {
  type?: unknown;
  data?: { order_id?: unknown; amount?: unknown; currency?: unknown };
}

@Injectable()
class Inbox {
  constructor(private readonly db: Database) {}

  /** The whole delivery in one transaction: it is recorded, and its effects happen, or neither. */
  async receive(messageId: string, event: PaidEvent): Promise<'accepted' | 'duplicate'> {
    const client = await this.db.pool.connect();
    try {
      await client.query('BEGIN');
      const inserted = await client.query(
        `INSERT INTO ref.inbox (message_id, endpoint, event_type, payload, processed_at) VALUES ($1, $2, $3, $4, now())
         ON CONFLICT (message_id) DO NOTHING RETURNING message_id`,
        [messageId, ENDPOINT, String(event.type ?? ''), JSON.stringify(event)],
      );
      if (inserted.rowCount === 0) {
        // Recorded before: nothing to undo, the transaction wrote nothing.
        await client.query('ROLLBACK');
        return 'duplicate';
      }
      const orderId = event.data?.order_id;
      if (event.type === 'payment.succeeded' && typeof orderId === 'string' && UUID.test(orderId)) {
        // Guarded by the status and the amount: a second payment of the same order, or a wrong
        // amount, changes nothing and ships nothing.
        const paid = await client.query<{ ship_to: unknown; items: unknown }>(
          `UPDATE ref.orders SET status = 'paid', paid_at = now(), updated_at = now()
            WHERE id = $1 AND status = 'awaiting_payment' AND amount_minor = $2 AND currency = $3
           RETURNING ship_to, items`,
          [orderId, Number(event.data?.amount), String(event.data?.currency ?? '')],
        );
        if (paid.rowCount === 1) {
          const { ship_to, items } = paid.rows[0];
          await client.query('INSERT INTO ref.outbox (order_id, payload) VALUES ($1, $2)', [
            orderId,
            JSON.stringify({ orderId, orderReference: null, shipTo: ship_to, items }),
          ]);
        }
      }
      await client.query('COMMIT');
      return 'accepted';
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }
}

@Controller()
class WebhookController {
  private readonly key = standardKey(process.env.WEBHOOK_SECRET ?? '');
  constructor(private readonly inbox: Inbox, private readonly db: Database) {}

  @Post('webhooks/:endpoint')
  @HttpCode(200)
  async webhook(@Param('endpoint') endpoint: string, @Req() req: RawBodyRequest<Request>): Promise<{ status: string; eventId: string }> {
    if (endpoint !== ENDPOINT) throw new NotFoundException('unknown endpoint');
    const raw = req.rawBody;
    if (!raw) throw new BadRequestException('no body');
    const header = (name: string) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    const messageId = verifyStandardWebhook(this.key, header, raw);
    if (!messageId) throw new UnauthorizedException('invalid signature');
    // Express's JSON parser has parsed the body already (rawBody keeps the bytes the HMAC covers).
    const event = req.body as PaidEvent;
    if (!event || typeof event !== 'object') throw new BadRequestException('not a JSON object');
    return { status: await this.inbox.receive(messageId, event), eventId: messageId };
  }

  @Get('health')
  health(): { status: string } {
    return { status: 'ok' };
  }

  @Get('health/ready')
  async ready(): Promise<{ status: string }> {
    await this.db.pool.query('SELECT 1').catch(() => {
      throw new ServiceUnavailableException('database');
    });
    return { status: 'ok' };
  }
}

/** The polling relay: claim a batch, call the carrier for each row, mark the ones it took. */
@Injectable()
class Relay implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Relay');
  private stopping = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  constructor(private readonly db: Database) {}

  onApplicationBootstrap(): void {
    this.loop = this.run();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      let claimed = 0;
      try {
        claimed = await this.tick();
      } catch (err) {
        this.logger.error(`relay pass failed: ${(err as Error).message}`);
      }
      if (claimed < BATCH && !this.stopping) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, POLL_MS);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  }

  /** One pass; returns the batch's size when it was full and all of it went (look again now), else 0 (wait a poll). */
  private async tick(): Promise<number> {
    const client = await this.db.pool.connect();
    try {
      await client.query('BEGIN');
      // SKIP LOCKED: a second relay (another replica) takes other rows instead of waiting; the
      // row locks, held until the commit, keep a row from being sent by two relays at once.
      const { rows } = await client.query<{ id: string; payload: unknown }>(
        'SELECT id, payload FROM ref.outbox WHERE dispatched_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED',
        [BATCH],
      );
      if (rows.length === 0) {
        await client.query('COMMIT');
        return 0;
      }
      const outcomes = await Promise.all(rows.map((row) => this.ship(row.id, row.payload)));
      const sent = rows.filter((_, i) => outcomes[i] === undefined).map((r) => r.id);
      const failed = rows.filter((_, i) => outcomes[i] !== undefined);
      if (sent.length) {
        await client.query('UPDATE ref.outbox SET dispatched_at = now(), attempts = attempts + 1 WHERE id = ANY($1::bigint[])', [sent]);
      }
      if (failed.length) {
        await client.query(
          'UPDATE ref.outbox o SET attempts = o.attempts + 1, last_error = f.error FROM unnest($1::bigint[], $2::text[]) AS f(id, error) WHERE o.id = f.id',
          [failed.map((r) => r.id), failed.map((r) => outcomes[rows.indexOf(r)]!)],
        );
      }
      await client.query('COMMIT');
      return sent.length === rows.length ? rows.length : 0;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** Undefined when the carrier took it (200/201), else the reason. */
  private async ship(id: string, payload: unknown): Promise<string | undefined> {
    try {
      const res = await fetch(`${CARRIER_URL}/shipments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': String(id) },
        body: JSON.stringify(payload),
        signal: AbortSignal.timeout(10_000),
      });
      await res.arrayBuffer();
      return res.status === 200 || res.status === 201 ? undefined : `carrier answered ${res.status}`;
    } catch (err) {
      return (err as Error).message;
    }
  }
}

@Module({ controllers: [WebhookController], providers: [Database, Inbox, Relay] })
class ReferenceModule {}

async function main(): Promise<void> {
  // The tables first, so that the relay's first pass and /health/ready find them.
  const setup = new Pool({ connectionString: process.env.DATABASE_URL, max: 1 });
  await setup.query(REFERENCE_SCHEMA);
  await setup.end();
  const app = await NestFactory.create<NestExpressApplication>(ReferenceModule, { rawBody: true, logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  await app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1');
}

if (require.main === module) {
  void main().catch((err: Error) => {
    console.error(`reference receiver failed: ${err.stack ?? err.message}`);
    process.exit(1);
  });
}
