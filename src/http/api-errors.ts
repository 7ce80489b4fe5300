import {
  ArgumentMetadata,
  ArgumentsHost,
  BadRequestException,
  Catch,
  ExceptionFilter,
  HttpException,
  Inject,
  Injectable,
  Logger,
  Optional,
  ValidationError,
  ValidationPipe,
} from '@nestjs/common';
import type { ValidatorOptions } from 'class-validator';
import { PW_PROVIDERS } from '../config/tokens';
import { KNOWN_PROVIDERS } from './known-provider';
import { exceedsJsonDepth, TOO_DEEP_DETAIL } from '../common/json-depth';
import { sendJson, setHeader } from './platform';
import { DomainError, ERROR_CODES, FieldError, HttpErrorCode, ValidationFailed } from '../common/domain-error';

/**
 * The answer of every code a request may get: the compiler demands one for each
 * code of ERROR_CODES that answers requests, and that its `error` is the table's.
 */
const HTTP_ANSWERS = {
  'VALIDATION.FAILED': { status: 400, error: 'validation_failed' },
  'RESOURCE.NOT_FOUND': { status: 404, error: 'not_found' },
  'ORDER.NOT_FOUND': { status: 404, error: 'not_found' },
  'PAYMENT.NOT_FOUND': { status: 404, error: 'not_found' },
  'DELIVERY.NOT_FOUND': { status: 404, error: 'not_found' },
  'OUTBOX.NOT_FOUND': { status: 404, error: 'not_found' },
  'BACKFILL.NOT_FOUND': { status: 404, error: 'not_found' },
  'BACKFILL.RUNNING': { status: 409, error: 'backfill_running', withDetail: true },
  'ORDER.ILLEGAL_TRANSITION': { status: 409, error: 'illegal_transition', withDetail: true },
  'OUTBOX.ILLEGAL_TRANSITION': { status: 409, error: 'illegal_transition', withDetail: true },
  'DELIVERY.BUSY': { status: 409, error: 'processing_in_progress', withDetail: true },
  'ORDER.REFERENCE_TAKEN': { status: 409, error: 'reference_taken' },
  'PAYMENT.ALREADY_REGISTERED': { status: 409, error: 'payment_already_registered' },
  'ORDER.ACCOUNT_MISMATCH': { status: 409, error: 'account_mismatch' },
  'ORDER.TOO_MANY_PAYMENTS': { status: 409, error: 'too_many_payments' },
  'IDEMPOTENCY.KEY_REUSED': { status: 422, error: 'idempotency_key_reused' },
  'REFUND.NOT_FOUND': { status: 404, error: 'not_found' },
  'COMMAND.NOT_SUPPORTED': { status: 422, error: 'not_supported', withDetail: true },
  'FULFILLMENT.ALREADY_DISPATCHED': { status: 409, error: 'already_dispatched' },
  'ORDER.BUSY': { status: 409, error: 'processing_in_progress', withDetail: true },
  'AUTH.UNAUTHORIZED': { status: 401, error: 'unauthorized' },
  'AUTH.ADMIN_DISABLED': { status: 503, error: 'admin_disabled' },
  'REQUEST.UNSUPPORTED_MEDIA_TYPE': { status: 415, error: 'unsupported_media_type' },
} as const satisfies { [C in HttpErrorCode]: { status: number; error: (typeof ERROR_CODES)[C]['http']; withDetail?: boolean } };

/** Maps a thrown error to the contract's status and body. */
export function toApiError(err: unknown): { status: number; body: Record<string, unknown> } {
  if (err instanceof ValidationFailed) {
    return { status: 400, body: { error: 'validation_failed', details: err.details } };
  }
  if (err instanceof DomainError && err.code in HTTP_ANSWERS) {
    const known: { status: number; error: string; withDetail?: boolean } = HTTP_ANSWERS[err.code as HttpErrorCode];
    const body: Record<string, unknown> = { error: known.error };
    if (known.withDetail) body.detail = err.detail ?? err.message;
    return { status: known.status, body };
  }
  // Input PostgreSQL cannot store (data exception, SQLSTATE class 22) that got past validation.
  const sqlState = String((err as { driverError?: { code?: unknown }; code?: unknown })?.driverError?.code ?? (err as { code?: unknown })?.code ?? '');
  if (/^22[0-9A-Z]{3}$/.test(sqlState)) {
    return { status: 400, body: { error: 'validation_failed', details: [{ field: 'body', message: 'a value cannot be stored' }] } };
  }
  if (err instanceof HttpException) {
    const status = err.getStatus();
    const parser = bodyParserError(err, status);
    if (parser) return parser;
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

/**
 * A body the app's parser refused before any route saw it (Express body-parser, Fastify's
 * content-type parsers; both reach Nest as an HttpException caused by the parser's error).
 */
function bodyParserError(err: HttpException, status: number): { status: number; body: Record<string, unknown> } | null {
  const cause = err.cause as { type?: unknown; code?: unknown } | undefined;
  if (status === 413) return { status, body: { error: 'payload_too_large' } };
  if (status === 415) return { status, body: { error: 'unsupported_media_type' } };
  const fromParser =
    cause instanceof SyntaxError || (typeof cause?.type === 'string' && cause.type.startsWith('entity.')) ||
    (typeof cause?.code === 'string' && cause.code.startsWith('FST_ERR_CTP'));
  if (status !== 400 || !fromParser) return null;
  const notJson = cause instanceof SyntaxError || cause?.type === 'entity.parse.failed' || /JSON/.test(String(cause?.code));
  return {
    status,
    body: { error: 'validation_failed', details: [{ field: 'body', message: notJson ? 'the body is not valid JSON' : 'the body cannot be read' }] },
  };
}

/** The REST API's filter: every error body has a code; a 5xx never leaks its message. */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Api');

  catch(err: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse();
    const { status, body } = toApiError(err);
    if (status >= 500 && !(err instanceof DomainError)) {
      this.logger.error(`unhandled error: ${(err as Error)?.stack ?? String(err)}`);
    }
    if (status === 401) setHeader(res, 'WWW-Authenticate', 'Bearer');
    sendJson(res, status, body);
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

/**
 * class-validator on every body and query: unknown fields refused, errors as `validation_failed`.
 * First, a body nested deeper than MAX_JSON_DEPTH is refused (class-transformer and class-validator
 * recurse: 20,000 levels would exhaust the stack, a 500), then text PostgreSQL cannot store (a 400
 * here rather than a 500 from the database later). A pipe runs after the guards, so an
 * unauthenticated request learns nothing of its input. Resolved by the module (`@UsePipes(ApiValidationPipe)`),
 * it knows the module's providers, which `@IsKnownProvider()` checks a `provider` against.
 */
@Injectable()
export class ApiValidationPipe extends ValidationPipe {
  private readonly providerNames: readonly string[] | undefined;

  constructor(@Optional() @Inject(PW_PROVIDERS) providers?: ReadonlyMap<string, unknown>) {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      transform: true,
      // One reason per field: the first rule it breaks.
      stopAtFirstError: true,
      exceptionFactory: (errors) => new ValidationFailed(flatten(errors)),
    });
    this.providerNames = providers ? [...providers.keys()] : undefined;
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'body' || metadata.type === 'query') {
      if (exceedsJsonDepth(value)) throw new ValidationFailed([{ field: metadata.type, message: TOO_DEEP_DETAIL }]);
      const bad = findUnstorableText(value, metadata.type);
      if (bad) throw new ValidationFailed([{ field: bad, message: 'must not contain NUL characters or unpaired surrogates' }]);
    }
    return super.transform(value, metadata);
  }

  /** The module's provider names ride on the object while it is validated, and leave with it. */
  protected override async validate(object: object, validatorOptions?: ValidatorOptions): Promise<ValidationError[]> {
    const names = this.providerNames;
    if (!names || typeof object !== 'object' || object === null) return super.validate(object, validatorOptions);
    Object.defineProperty(object, KNOWN_PROVIDERS, { value: names, enumerable: false, configurable: true });
    try {
      return await super.validate(object, validatorOptions);
    } finally {
      delete (object as { [KNOWN_PROVIDERS]?: unknown })[KNOWN_PROVIDERS];
    }
  }
}

/** The pipe without the module's providers (built-in names only), for routes that name no provider. */
export const apiValidationPipe = new ApiValidationPipe();

/** A NUL, or a UTF-16 surrogate without its pair. */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The path of a string PostgreSQL cannot store (a NUL, an unpaired UTF-16 surrogate), or null. */
export function findUnstorableText(value: unknown, path: string, depth = 0): string | null {
  if (typeof value === 'string') return UNSTORABLE.test(value) ? path : null;
  if (depth > 32 || value === null || typeof value !== 'object') return null;
  for (const [key, child] of Object.entries(value)) {
    if (UNSTORABLE.test(key)) return path;
    const field = Array.isArray(value) ? `${path}[${key}]` : path === 'body' || path === 'query' ? key : `${path}.${key}`;
    const found = findUnstorableText(child, field, depth + 1);
    if (found) return found;
  }
  return null;
}

export { BadRequestException };
