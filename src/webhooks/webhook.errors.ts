import { HttpException } from '@nestjs/common';

/** Every answer of the receive path other than 200, and its status (docs/webhooks.md#checks-and-answers), in one place. */
export const WEBHOOK_ERROR_STATUS = {
  unknown_endpoint: 404,
  payload_too_large: 413,
  missing_signature: 401,
  invalid_signature: 401,
  timestamp_out_of_tolerance: 401,
  malformed_payload: 400,
  unavailable: 503,
  rate_limited: 429,
} as const;

export type WebhookErrorCode = keyof typeof WEBHOOK_ERROR_STATUS;

/** Answers `{"error": code, "detail"?}` with the code's status. */
export class WebhookError extends HttpException {
  constructor(
    readonly code: WebhookErrorCode,
    readonly detail?: string,
  ) {
    super(detail === undefined ? { error: code } : { error: code, detail }, WEBHOOK_ERROR_STATUS[code]);
  }
}
