import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiResponse } from '@nestjs/swagger';

export class FieldErrorDoc {
  @ApiProperty({ example: 'shipTo.country' }) field: string;
  @ApiProperty({ example: 'country must be an ISO 3166-1 alpha-2 code' }) message: string;
}

export class ErrorBody {
  @ApiProperty({ example: 'not_found', description: 'A stable error code.' }) error: string;
  @ApiPropertyOptional({ example: 'a paid order cannot be canceled' }) detail?: string;
  @ApiPropertyOptional({ type: [FieldErrorDoc] }) details?: FieldErrorDoc[];
}

/** The error statuses of the REST API. */
export type ErrorStatus = 400 | 401 | 404 | 409 | 415 | 422 | 503;

/** An error body as the API answers it (api-errors.ts `toApiError`). */
export interface ErrorExample {
  error: string;
  detail?: string;
  details?: Array<{ field: string; message: string }>;
}

/** One documented error answer of a route: its example body, and a description of its own if it has one. */
export interface ErrorDoc {
  description?: string;
  example: ErrorExample;
}

/** A route's own error answers, by status; they replace the shared ones. */
export type ErrorDocs = Partial<Record<ErrorStatus, ErrorDoc>>;

/** The 400 of a route: the first field it refuses, with the message its validation gives. */
export function fieldError(field: string, message: string): ErrorDoc {
  return { example: { error: 'validation_failed', details: [{ field, message }] } };
}

/** A 409 (or any answer with a code and, for refused transitions, a detail). */
export function conflict(description: string, error: string, detail?: string): ErrorDoc {
  return { description, example: detail === undefined ? { error } : { error, detail } };
}

/**
 * The answers that read the same on every route. 400 and 409 are not among them: what a route
 * validates and what it refuses are its own, so a route that documents them says which.
 */
export const SHARED_ERROR_DOCS: Partial<Record<ErrorStatus, Required<ErrorDoc>>> = {
  401: { description: 'Token missing or wrong', example: { error: 'unauthorized' } },
  404: { description: 'Unknown id (also a path id that is not a UUID)', example: { error: 'not_found' } },
  415: {
    description: 'A body that is not JSON (Content-Type other than application/json): what a cross-site form sends',
    example: { error: 'unsupported_media_type' },
  },
  422: { description: 'Idempotency-Key reused with another body', example: { error: 'idempotency_key_reused' } },
  503: { description: 'No ADMIN_TOKEN configured', example: { error: 'admin_disabled' } },
};

const GENERIC_DESCRIPTIONS: Record<ErrorStatus, string> = {
  400: 'Invalid query or body',
  401: SHARED_ERROR_DOCS[401]!.description,
  404: SHARED_ERROR_DOCS[404]!.description,
  409: 'Refused transition or conflict',
  415: SHARED_ERROR_DOCS[415]!.description,
  422: SHARED_ERROR_DOCS[422]!.description,
  503: SHARED_ERROR_DOCS[503]!.description,
};

/**
 * Documents the contract's error answers of a route: the statuses it answers, then
 * (optionally) its own answers by status. 401, 404, 415, 422 and 503 have shared examples; 400 and 409
 * must be given by the route, e.g.
 * `@ApiErrorResponses(400, 401, 409, 503, { 400: fieldError('limit', '…'), 409: conflict('…', 'reference_taken') })`.
 */
export function ApiErrorResponses(...args: [...ErrorStatus[], ErrorDocs] | ErrorStatus[]): MethodDecorator {
  const list: Array<ErrorStatus | ErrorDocs> = args;
  const last = list[list.length - 1];
  const routeDocs: ErrorDocs = typeof last === 'object' ? last : {};
  const statuses = list.filter((a): a is ErrorStatus => typeof a === 'number');
  for (const status of Object.keys(routeDocs).map(Number) as ErrorStatus[]) {
    if (!statuses.includes(status)) throw new Error(`ApiErrorResponses: an example for ${status}, which the route does not list`);
  }
  return applyDecorators(
    ...statuses.map((status) => {
      const doc = routeDocs[status] ?? SHARED_ERROR_DOCS[status];
      if (!doc) throw new Error(`ApiErrorResponses: ${status} has no shared example; give the route its own`);
      return ApiResponse({
        status,
        description: doc.description ?? GENERIC_DESCRIPTIONS[status],
        type: ErrorBody,
        example: doc.example,
      });
    }),
  );
}
