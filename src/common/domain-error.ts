/**
 * Every error code of the module, in one table (`PAYMENT.ILLEGAL_TRANSITION`…): the HTTP layer
 * maps each to a status and a body (api-errors.ts, checked by the compiler against this table);
 * processors record the code as a delivery's `last_error`. `http: null` marks a code that never
 * answers a request as itself (a retry inside the module decides what happens).
 */
export const ERROR_CODES = {
  'VALIDATION.FAILED': { http: 'validation_failed' },
  'RESOURCE.NOT_FOUND': { http: 'not_found' },
  'ORDER.NOT_FOUND': { http: 'not_found' },
  'PAYMENT.NOT_FOUND': { http: 'not_found' },
  'DELIVERY.NOT_FOUND': { http: 'not_found' },
  'OUTBOX.NOT_FOUND': { http: 'not_found' },
  'BACKFILL.NOT_FOUND': { http: 'not_found' },
  'BACKFILL.RUNNING': { http: 'backfill_running' },
  'ORDER.ILLEGAL_TRANSITION': { http: 'illegal_transition' },
  'OUTBOX.ILLEGAL_TRANSITION': { http: 'illegal_transition' },
  'DELIVERY.BUSY': { http: 'processing_in_progress' },
  'ORDER.REFERENCE_TAKEN': { http: 'reference_taken' },
  'PAYMENT.ALREADY_REGISTERED': { http: 'payment_already_registered' },
  // A registration for an order that names another merchant account, or that holds the most payments.
  'ORDER.ACCOUNT_MISMATCH': { http: 'account_mismatch' },
  'ORDER.TOO_MANY_PAYMENTS': { http: 'too_many_payments' },
  'IDEMPOTENCY.KEY_REUSED': { http: 'idempotency_key_reused' },
  // (v4) Payment commands (docs/commands.md).
  'REFUND.NOT_FOUND': { http: 'not_found' },
  'COMMAND.NOT_SUPPORTED': { http: 'not_supported' },
  'FULFILLMENT.ALREADY_DISPATCHED': { http: 'already_dispatched' },
  // Another transaction is changing the order's fulfillment right now: a moment later succeeds.
  'ORDER.BUSY': { http: 'processing_in_progress' },
  'AUTH.UNAUTHORIZED': { http: 'unauthorized' },
  'AUTH.ADMIN_DISABLED': { http: 'admin_disabled' },
  // A state-changing request whose body is not JSON (what a cross-site form sends).
  'REQUEST.UNSUPPORTED_MEDIA_TYPE': { http: 'unsupported_media_type' },
  // Processing only: the delivery is retried, then parked or failed with the code.
  'PAYMENT.NOT_FOUND_YET': { http: null },
  // (v4) An event that may confirm a refund whose provider id the module has not recorded yet (§3.1).
  'PAYMENT.CREATED_CONCURRENTLY': { http: null },
  'FULFILLMENT.BUSY': { http: null },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;
/** The codes a request may be answered with. */
export type HttpErrorCode = { [C in ErrorCode]: (typeof ERROR_CODES)[C]['http'] extends null ? never : C }[ErrorCode];

/** An error with a stable code. The HTTP layer maps codes to statuses and bodies in one place. */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

/** A field the request got wrong (400 validation_failed). */
export interface FieldError {
  field: string;
  message: string;
}

export class ValidationFailed extends DomainError {
  constructor(readonly details: FieldError[]) {
    super('VALIDATION.FAILED', details.map((d) => `${d.field}: ${d.message}`).join('; '));
  }
}

/** What a code looks like: `PAYMENT.NOT_FOUND_YET`, a SQLSTATE (`23505`), an errno (`ECONNREFUSED`). */
const CODE_SHAPE = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The code an error carries (its own `code`, or with `cause` its cause's), when it has the shape of
 * one; else `fallback`. Only a code is repeated where it goes (a delivery's outcome, a row, a log
 * line): never a message from outside.
 */
export function codeOf(err: unknown, fallback: string, { cause = false }: { cause?: boolean } = {}): string {
  const own = (err as { code?: unknown })?.code;
  if (typeof own === 'string' && CODE_SHAPE.test(own)) return own;
  if (cause) {
    const inner = (err as { cause?: { code?: unknown } })?.cause?.code;
    if (typeof inner === 'string' && CODE_SHAPE.test(inner)) return inner;
  }
  return fallback;
}
