import { createHash } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { canonicalJson } from '../common/canonical-json';
import { DomainError, ValidationFailed } from '../common/domain-error';
import { Money, MoneyError } from './money';
import type { IdempotencyKeyStore } from './idempotency-key.store';

/**
 * What every state-changing route of the payments API does with its request the same way
 * (docs/rest-api.md#idempotency-key, #money): the `Idempotency-Key` header's rules, the claim of a
 * key or the replay of its first answer, and an amount read against its currency.
 */

/** A response to send as it is: status and body (the first response of an idempotent request). */
export interface Answer<T> {
  status: number;
  body: T;
}

/** An `Idempotency-Key` given is 1 to 255 characters (400 otherwise, before anything is read). */
export function checkIdempotencyKey(key: string | undefined): void {
  if (key !== undefined && (key.length === 0 || key.length > 255)) {
    throw new ValidationFailed([{ field: 'Idempotency-Key', message: 'must be 1 to 255 characters' }]);
  }
}

/**
 * Claims `key` for this request in the caller's transaction, or returns the first response given to
 * it: the same body (key order aside) answers that response again, another body is
 * `IDEMPOTENCY.KEY_REUSED` (422). A second request with the key waits on the first one's row until
 * it commits, so two at once cannot both act.
 */
export async function replayOrClaim<T>(keys: IdempotencyKeyStore, em: EntityManager, scope: string, key: string, rawBody: unknown): Promise<Answer<T> | null> {
  const hash = createHash('sha256').update(canonicalJson(rawBody ?? {})).digest('hex');
  const first = await keys.claim(em, scope, key, hash);
  if (!first) return null;
  if (first.requestHash !== hash) throw new DomainError('IDEMPOTENCY.KEY_REUSED', 'this Idempotency-Key was used with another body');
  return first.answer as Answer<T>;
}

/** An amount of a request, read against its currency; a bad one is a 400 naming `amount` (or `currency`). */
export function parseRequestAmount(amount: string, currency: string): Money {
  try {
    return Money.parse(amount, currency);
  } catch (err) {
    if (err instanceof MoneyError) {
      const field = err.code === 'MONEY.UNKNOWN_CURRENCY' ? 'currency' : 'amount';
      throw new ValidationFailed([{ field, message: err.message }]);
    }
    throw err;
  }
}
