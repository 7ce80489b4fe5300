/**
 * An error with a stable code (`ORDER.NOT_FOUND`, `PAYMENT.NOT_FOUND_YET`…). The HTTP layer maps
 * codes to statuses and bodies in one place (api-errors.ts); processors record the code.
 */
export class DomainError extends Error {
  constructor(
    readonly code: string,
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
