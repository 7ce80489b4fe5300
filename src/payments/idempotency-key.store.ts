import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { PW_CONNECTION } from '../database/data-source';

/** How long a key answers its first response again (docs/rest-api.md#idempotency-key); older ones are only weight. */
const KEY_LIFETIME = `interval '24 hours'`;

/** The first request of a key: the hash of its body, and the answer it got. */
export interface FirstRequest {
  requestHash: string;
  answer: { status: number; body: unknown };
}

/** The table `idempotency_keys`: the keys of idempotent requests, each with its first answer. */
@Injectable()
export class IdempotencyKeyStore {
  constructor(@InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource) {}

  /**
   * Claims the key for a request of this body hash, in the caller's transaction: null when claimed
   * (a new key, or one past its lifetime, taken over), else the first request. A second request with
   * the same key waits on the first one's row until it commits, so two at once cannot both claim it.
   */
  async claim(em: EntityManager, scope: string, key: string, requestHash: string): Promise<FirstRequest | null> {
    const claimed: unknown[] = await em.query(
      `INSERT INTO idempotency_keys (scope, key, request_hash, created_at) VALUES ($1, $2, $3, now())
       ON CONFLICT (scope, key) DO UPDATE
         SET request_hash = EXCLUDED.request_hash, response_status = NULL, response_body = NULL, created_at = now()
         WHERE idempotency_keys.created_at < now() - ${KEY_LIFETIME}
       RETURNING key`,
      [scope, key, requestHash],
    );
    if (claimed.length > 0) return null;
    const [first] = await em.query(
      `SELECT request_hash, response_status, response_body FROM idempotency_keys WHERE scope = $1 AND key = $2`,
      [scope, key],
    );
    return { requestHash: first.request_hash, answer: { status: first.response_status, body: JSON.parse(first.response_body) } };
  }

  /** The answer of the request that claimed the key, committed with what that request did. */
  async saveAnswer(em: EntityManager, scope: string, key: string, answer: { status: number; body: unknown }): Promise<void> {
    await em.query(`UPDATE idempotency_keys SET response_status = $3, response_body = $4 WHERE scope = $1 AND key = $2`, [
      scope,
      key,
      answer.status,
      JSON.stringify(answer.body),
    ]);
  }

  /** Deletes the keys past their lifetime, `batch` at a time, each batch committed on its own (no long lock); returns how many. */
  async purgeExpired(batch: number): Promise<number> {
    let total = 0;
    for (;;) {
      const [{ n }] = await this.dataSource.query(
        `WITH d AS (
           DELETE FROM idempotency_keys WHERE (scope, key) IN (
             SELECT scope, key FROM idempotency_keys WHERE created_at < now() - ${KEY_LIFETIME} LIMIT ${batch})
           RETURNING 1)
         SELECT count(*)::int AS n FROM d`,
        [],
      );
      total += n;
      if (n < batch) return total;
    }
  }
}
