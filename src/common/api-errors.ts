import {
  ArgumentsHost,
  BadRequestException,
  Catch,
  ExceptionFilter,
  HttpException,
  Logger,
  ValidationError,
  ValidationPipe,
} from '@nestjs/common';
import type { Response } from 'express';
import { DomainError, FieldError, ValidationFailed } from './domain-error';

/** Every error code of the REST API and its answer (CONTRACT §3), in one place. */
const DOMAIN_ERRORS: Record<string, { status: number; error: string; withDetail?: boolean }> = {
  'RESOURCE.NOT_FOUND': { status: 404, error: 'not_found' },
  'ORDER.NOT_FOUND': { status: 404, error: 'not_found' },
  'PAYMENT.NOT_FOUND': { status: 404, error: 'not_found' },
  'DELIVERY.NOT_FOUND': { status: 404, error: 'not_found' },
  'OUTBOX.NOT_FOUND': { status: 404, error: 'not_found' },
  'ORDER.ILLEGAL_TRANSITION': { status: 409, error: 'illegal_transition', withDetail: true },
  'OUTBOX.ILLEGAL_TRANSITION': { status: 409, error: 'illegal_transition', withDetail: true },
  'DELIVERY.BUSY': { status: 409, error: 'processing_in_progress', withDetail: true },
  'ORDER.REFERENCE_TAKEN': { status: 409, error: 'reference_taken' },
  'PAYMENT.ALREADY_REGISTERED': { status: 409, error: 'payment_already_registered' },
  'IDEMPOTENCY.KEY_REUSED': { status: 422, error: 'idempotency_key_reused' },
  'AUTH.UNAUTHORIZED': { status: 401, error: 'unauthorized' },
  'AUTH.ADMIN_DISABLED': { status: 503, error: 'admin_disabled' },
};

/** Maps a thrown error to the contract's status and body. */
export function toApiError(err: unknown): { status: number; body: Record<string, unknown> } {
  if (err instanceof ValidationFailed) {
    return { status: 400, body: { error: 'validation_failed', details: err.details } };
  }
  if (err instanceof DomainError) {
    const known = DOMAIN_ERRORS[err.code];
    if (known) {
      const body: Record<string, unknown> = { error: known.error };
      if (known.withDetail) body.detail = err.detail ?? err.message;
      return { status: known.status, body };
    }
  }
  // Input PostgreSQL cannot store (data exception, SQLSTATE class 22) that got past validation.
  const sqlState = String((err as { driverError?: { code?: unknown }; code?: unknown })?.driverError?.code ?? (err as { code?: unknown })?.code ?? '');
  if (/^22[0-9A-Z]{3}$/.test(sqlState)) {
    return { status: 400, body: { error: 'validation_failed', details: [{ field: 'body', message: 'a value cannot be stored' }] } };
  }
  if (err instanceof HttpException) {
    const status = err.getStatus();
    const response = err.getResponse();
    if (typeof response === 'object' && response !== null && 'error' in response && typeof (response as { error: unknown }).error === 'string' && /^[a-z_]+$/.test((response as { error: string }).error)) {
      return { status, body: response as Record<string, unknown> };
    }
    const code =
      status === 404 ? 'not_found' : status === 401 ? 'unauthorized' : status === 403 ? 'forbidden' : status < 500 ? 'bad_request' : 'internal_error';
    return { status, body: { error: code } };
  }
  return { status: 500, body: { error: 'internal_error' } };
}

/** The REST API's filter: every error body has a code; a 5xx never leaks its message. */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Api');

  catch(err: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const { status, body } = toApiError(err);
    if (status >= 500 && !(err instanceof DomainError)) {
      this.logger.error(`unhandled error: ${(err as Error)?.stack ?? String(err)}`);
    }
    if (status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
    res.status(status).json(body);
  }
}

function flatten(errors: ValidationError[], parent = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const field = parent ? (/^\d+$/.test(e.property) ? `${parent}[${e.property}]` : `${parent}.${e.property}`) : e.property;
    for (const message of new Set(Object.values(e.constraints ?? {}))) out.push({ field, message });
    if (e.children?.length) out.push(...flatten(e.children, field));
  }
  return out;
}

/** class-validator on every body and query: unknown fields refused, errors as `validation_failed`. */
export const apiValidationPipe = new ValidationPipe({
  whitelist: true,
  forbidNonWhitelisted: true,
  transform: true,
  // One reason per field: the first rule it breaks.
  stopAtFirstError: true,
  exceptionFactory: (errors) => new ValidationFailed(flatten(errors)),
});

export { BadRequestException };
