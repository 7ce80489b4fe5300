import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PW_CONNECTION } from '../../database/data-source';

/** What a poll reads of a payment: who it is at the provider, and what it is worth. */
export interface PollCandidate {
  paymentId: string;
  providerPaymentId: string;
  merchantAccountId: string;
  amountMinor: bigint;
  currency: string;
  /** The provider's ids of its recorded captures, oldest first. */
  captureIds: string[];
}

/** Which payments an endpoint polls: its provider, the accounts it serves (`'*'`: any), and when. */
export interface PollScope {
  provider: string;
  accounts: readonly string[] | '*';
  /** `pollAfterSeconds`; null for an endpoint that polls only what an operator asks for. */
  afterSeconds: number | null;
}

export type PollResult = 'changed' | 'unchanged' | 'error';

/** The statuses polling looks at: a payment still waiting for news. */
export const OPEN_STATUSES = ['pending', 'processing', 'authorized'] as const;
/** The longest wait between two polls of one payment. */
export const MAX_WAIT_SECONDS = 3_600;
/** A payment unchanged for longer is no longer polled (an operator may still ask). */
export const MAX_AGE_SECONDS = 7 * 86_400;

/**
 * The polling schedule of each payment (table `payment_polls`, docs/operations.md#when-webhooks-stop):
 * the one store that writes it. A payment still open `afterSeconds` after its last change is due;
 * the polls come at that age, then after waits of `afterSeconds`, twice that, four times that… at most an hour, for 7 days after the
 * change; a payment that changes starts a new schedule (`since` no longer its `updated_at`). An
 * operator's request makes a payment due at once, whatever its status or age.
 *
 * Claiming is one statement: the schedule rows of the due payments are written (upserted) with their
 * next time, guarded so that a row another process claimed since is not claimed again. Two pollers
 * never ask about one payment for one turn of its schedule, whichever process they run in.
 */
@Injectable()
export class PaymentPollStore {
  constructor(@InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource) {}

  /** Claims at most `limit` due payments of the scope at `nowMs`, the longest waiting first. */
  async claimDue(scope: PollScope, nowMs: number, limit: number): Promise<PollCandidate[]> {
    const rows: Array<{ id: string; provider_payment_id: string; merchant_account_id: string; amount_minor: string; currency: string; capture_ids: string[] }> =
      await this.dataSource.query(
        // Two parts, each on its index: what operators asked for (payment_polls_requested), and the
        // open payments past their age (payments_open), whose schedule row is missing, stale or due.
        `WITH due AS (
           (SELECT p.id, p.updated_at, p.provider_payment_id, p.merchant_account_id, p.amount_minor, p.currency,
                   CASE WHEN pp.since = p.updated_at THEN pp.polls ELSE 0 END AS polls, pp.requested_at AS due_at
              FROM payment_polls pp
              JOIN payments p ON p.id = pp.payment_id
             WHERE pp.requested_at IS NOT NULL
               AND p.provider = $1 AND ($2::text[] IS NULL OR p.merchant_account_id = ANY($2::text[])))
           UNION ALL
           (SELECT p.id, p.updated_at, p.provider_payment_id, p.merchant_account_id, p.amount_minor, p.currency,
                   CASE WHEN pp.since = p.updated_at THEN pp.polls ELSE 0 END AS polls,
                   CASE WHEN pp.since = p.updated_at THEN pp.next_at ELSE p.updated_at + make_interval(secs => $4::int) END AS due_at
              FROM payments p
              LEFT JOIN payment_polls pp ON pp.payment_id = p.id
             WHERE $4::int IS NOT NULL
               AND p.provider = $1 AND ($2::text[] IS NULL OR p.merchant_account_id = ANY($2::text[]))
               AND p.status IN ('pending', 'processing', 'authorized')
               AND p.updated_at <= $3::timestamptz - make_interval(secs => $4::int)
               AND p.updated_at > $3::timestamptz - make_interval(secs => $6::int)
               AND (pp.payment_id IS NULL OR (pp.requested_at IS NULL AND (pp.since <> p.updated_at OR pp.next_at <= $3::timestamptz))))
           ORDER BY due_at
           LIMIT $5
         ),
         claimed AS (
           INSERT INTO payment_polls AS pp (payment_id, since, polls, next_at, requested_at, last_polled_at)
           SELECT id, updated_at, polls + 1,
                  $3::timestamptz + make_interval(secs => LEAST(COALESCE($4::int, $7::int) * power(2, polls), $7::int)),
                  NULL, $3::timestamptz
             FROM due
           ON CONFLICT (payment_id) DO UPDATE
              SET since = EXCLUDED.since, polls = EXCLUDED.polls, next_at = EXCLUDED.next_at,
                  requested_at = NULL, last_polled_at = EXCLUDED.last_polled_at
            WHERE pp.requested_at IS NOT NULL OR pp.since <> EXCLUDED.since OR pp.next_at <= $3::timestamptz
           RETURNING payment_id
         )
         SELECT d.id, d.provider_payment_id, d.merchant_account_id, d.amount_minor::text AS amount_minor, d.currency,
                ARRAY(SELECT c.capture_id FROM payment_captures c
                       WHERE c.provider = $1 AND c.merchant_account_id = d.merchant_account_id AND c.provider_payment_id = d.provider_payment_id
                       ORDER BY c.recorded_at, c.capture_id) AS capture_ids
           FROM due d JOIN claimed c ON c.payment_id = d.id
          ORDER BY d.due_at`,
        [
          scope.provider,
          scope.accounts === '*' ? null : scope.accounts,
          new Date(nowMs).toISOString(),
          scope.afterSeconds,
          limit,
          MAX_AGE_SECONDS,
          MAX_WAIT_SECONDS,
        ],
      );
    return rows.map((r) => ({
      paymentId: r.id,
      providerPaymentId: r.provider_payment_id,
      merchantAccountId: r.merchant_account_id,
      amountMinor: BigInt(r.amount_minor),
      currency: r.currency,
      captureIds: r.capture_ids,
    }));
  }

  /** What a poll found, and, when the provider asked to wait (`429`), no next poll before `notBeforeMs`. */
  async recordResult(paymentId: string, result: PollResult, notBeforeMs: number | null): Promise<void> {
    await this.dataSource.query(
      `UPDATE payment_polls SET last_result = $2, next_at = GREATEST(next_at, COALESCE($3::timestamptz, next_at)) WHERE payment_id = $1`,
      [paymentId, result, notBeforeMs === null ? null : new Date(notBeforeMs).toISOString()],
    );
  }

  /** An operator asks for a poll of the payment now; false when there is no such payment. */
  async request(paymentId: string, nowMs: number): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `INSERT INTO payment_polls (payment_id, since, polls, next_at, requested_at)
       SELECT id, updated_at, 0, $2::timestamptz, $2::timestamptz FROM payments WHERE id = $1
       ON CONFLICT (payment_id) DO UPDATE SET requested_at = EXCLUDED.requested_at
       RETURNING payment_id`,
      [paymentId, new Date(nowMs).toISOString()],
    );
    return rows.length > 0;
  }

  /**
   * Every open payment of the scope is due at once (Stripe told of an `event_generation_failure`:
   * its webhooks for that time may never come). Returns how many.
   */
  async requestOpen(scope: Pick<PollScope, 'provider' | 'accounts'>, nowMs: number): Promise<number> {
    const rows: unknown[] = await this.dataSource.query(
      `INSERT INTO payment_polls (payment_id, since, polls, next_at, requested_at)
       SELECT id, updated_at, 0, $3::timestamptz, $3::timestamptz FROM payments
        WHERE provider = $1 AND ($2::text[] IS NULL OR merchant_account_id = ANY($2::text[]))
          AND status IN ('pending', 'processing', 'authorized')
       ON CONFLICT (payment_id) DO UPDATE SET requested_at = EXCLUDED.requested_at
       RETURNING payment_id`,
      [scope.provider, scope.accounts === '*' ? null : scope.accounts, new Date(nowMs).toISOString()],
    );
    return rows.length;
  }

  /** The payment's provider and account, or null when there is no such payment. */
  async paymentOf(paymentId: string): Promise<{ provider: string; merchantAccountId: string } | null> {
    const rows: Array<{ provider: string; merchant_account_id: string }> = await this.dataSource.query(
      `SELECT provider, merchant_account_id FROM payments WHERE id = $1`,
      [paymentId],
    );
    return rows.length === 0 ? null : { provider: rows[0].provider, merchantAccountId: rows[0].merchant_account_id };
  }
}
