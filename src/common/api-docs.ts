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

const DESCRIPTIONS: Record<number, { description: string; example: Record<string, unknown> }> = {
  400: {
    description: 'Invalid query or body',
    example: { error: 'validation_failed', details: [{ field: 'amount', message: 'amount must be a decimal string such as "49.90"' }] },
  },
  401: { description: 'Token missing or wrong', example: { error: 'unauthorized' } },
  404: { description: 'Unknown id', example: { error: 'not_found' } },
  409: { description: 'Refused transition or conflict', example: { error: 'illegal_transition', detail: 'a paid order cannot be canceled' } },
  422: { description: 'Idempotency-Key reused with another body', example: { error: 'idempotency_key_reused' } },
  503: { description: 'No ADMIN_TOKEN configured', example: { error: 'admin_disabled' } },
};

/** Documents the contract's error answers of a route (CONTRACT §3). */
export function ApiErrorResponses(...statuses: number[]): MethodDecorator {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({ status, description: DESCRIPTIONS[status].description, type: ErrorBody, example: DESCRIPTIONS[status].example }),
    ),
  );
}
