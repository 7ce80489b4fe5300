import { isRetryableStatus, retryAfterMs } from '../common/http-answers';
import { type CommandAnswer, ProviderApiError } from './provider';

/**
 * How a provider's answer to a payment command is read, the same for every provider (docs/commands.md#sent-once):
 * no answer (a network error, a timeout) is retried under the same key, and the effect may
 * have happened; `409` (the same key still in flight at the provider), `408`, `425`, `429` and
 * `5xx` are retried, honouring `Retry-After`; any other `4xx` ends the command at once with the
 * provider's reason.
 */
export function failedCall(status: number | null | undefined, reason: string, retryAfter?: string | null): CommandAnswer {
  const why = storable(reason);
  if (status === null || status === undefined) return { ok: false, retryable: true, reason: why, mayHaveHappened: true };
  if (status === 409 || isRetryableStatus(status)) {
    const after = retryAfterMs(retryAfter ?? null);
    return {
      ok: false,
      retryable: true,
      reason: `${status}: ${why}`,
      ...(after === undefined ? {} : { retryAfterMs: after }),
      // A 5xx may come after the provider did it: the same key asks again.
      mayHaveHappened: status >= 500 || status === 409,
    };
  }
  return { ok: false, retryable: false, reason: `${status}: ${why}` };
}

/**
 * What an official client threw, read the same way: an HTTP status and `Retry-After` where the
 * client exposes them (each client names them its own way: `statusCode`, `status`,
 * `http_status_code`, `response.status`…), else no answer.
 */
export function thrownCall(err: unknown, what = 'the provider'): CommandAnswer {
  const e = (err ?? {}) as Record<string, unknown>;
  const response = (e.response ?? e.rawResponse ?? {}) as Record<string, unknown>;
  const status = firstNumber(e.statusCode, e.status, e.http_status_code, e.httpStatusCode, response.status, response.statusCode);
  const headers = (e.headers ?? response.headers ?? {}) as Record<string, unknown> | { get?(name: string): string | null };
  let retryAfter: string | null = null;
  if (typeof (headers as { get?: unknown }).get === 'function') retryAfter = (headers as { get(name: string): string | null }).get('retry-after');
  else {
    const value = (headers as Record<string, unknown>)['retry-after'] ?? (headers as Record<string, unknown>)['Retry-After'];
    retryAfter = typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? value[0] : null;
  }
  const message = typeof e.message === 'string' && e.message !== '' ? e.message : `${what} failed`;
  return failedCall(status, message, retryAfter);
}

function firstNumber(...values: unknown[]): number | null {
  for (const v of values) if (typeof v === 'number' && Number.isInteger(v) && v >= 100 && v <= 599) return v;
  return null;
}

/** A reason as it may be stored and shown: one line, at most 500 characters. */
function storable(text: string): string {
  const line = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return line.length > 500 ? `${line.slice(0, 497)}...` : line;
}

/**
 * A read that got no useful answer (polling, docs/operations.md#when-webhooks-stop), from its failed
 * call as read above: a ProviderApiError with the provider's reason (never a credential: the caller
 * has taken them out) and, for a `429` or a `5xx` that said when, the wait it asked for.
 */
export function readFailure(failed: CommandAnswer, what: string): ProviderApiError {
  return failed.ok ? new ProviderApiError(what) : new ProviderApiError(`${what}: ${failed.reason}`, failed.retryAfterMs ?? null);
}
