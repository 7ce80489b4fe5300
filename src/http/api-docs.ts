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

/** Where, under `<docs>`, the Swagger UI reads the token its page was opened with (HttpSurface.loginToken). */
export const LOGIN_TOKEN_PATH = 'login-token';

/**
 * The document's description, which the Swagger UI shows above the first tag: what the routes
 * are, and how the page authorizes its requests.
 */
export const DOCS_DESCRIPTION =
  'Idempotent payment webhooks: signed deliveries recorded once, processed in one transaction, ' +
  'fulfilled once through an outbox. Every route but webhooks and health needs the admin token, as ' +
  '`Authorization: Bearer <ADMIN_TOKEN>`.\n\n' +
  '**Sending requests from this page.** Opened with the browser\'s login (any user name, the token as ' +
  'password), the page sends that same token as its bearer: **Authorize** shows it as set (a closed ' +
  'lock), and every **Try it out → Execute** is authorized. The API itself never accepts the browser\'s ' +
  'login, so another site cannot send requests with it. If the lock is open (a host that guards these ' +
  'pages with its own login), press **Authorize** and enter the admin token. The token is kept in this ' +
  "page's memory only: never in the browser's storage.";

/**
 * The tags of the document, in the order the Swagger UI shows them, each named for what it holds
 * (every operation has exactly one).
 */
export const DOCS_TAGS: ReadonlyArray<[name: string, description: string]> = [
  ['webhooks', 'Signed deliveries from payment providers, verified and recorded once; no admin token.'],
  ['orders', 'Orders, the provider payments they expect, and their lifecycle (paid, canceled, fulfilled once).'],
  ['payments', 'Provider payments as recorded here, with their status and refunds.'],
  ['refunds', 'Refunds asked of the provider through the module: sent once, confirmed by the provider (docs/commands.md).'],
  ['endpoints', "Each configured endpoint's health: its last deliveries, counts, silence, secrets' last use and the provider's alerts (no secret shown)."],
  ['webhook deliveries', 'The archive of the deliveries received (headers with signatures redacted, body, status and outcome), and their replay.'],
  ['outbox', 'The outbox of carrier dispatches and event notifications: its messages, and the retry of a dead one.'],
  ['reconciliation', "Comparing our records with what a provider says it sent and paid, the backfill of missed events from Stripe's Events API, and asking the provider about a payment whose webhook never came."],
  ['retention', 'The purge of what the retention window allows (it also runs daily).'],
  ['health', 'Liveness and readiness probes, without auth.'],
  ['metrics', 'Prometheus metrics (admin token).'],
];

/**
 * The Swagger UI's `onComplete` (swagger-ui-init.js, through @nestjs/swagger), as source: once the
 * UI is drawn, it asks `<docs>/login-token` for the token its page was opened with and authorizes
 * the `admin` bearer scheme with it, so the operator logs in once. A 404 (a host's own guard) or
 * any failure leaves Authorize as it is. Given as source text so that no transpiler or coverage
 * instrumentation rewrites what the browser runs; nothing of the token is in the script.
 */
export const SWAGGER_UI_ON_COMPLETE = new Function(`
  var script = document.querySelector('script[src$="swagger-ui-init.js"]');
  var url = new URL('${LOGIN_TOKEN_PATH}', script ? script.src : window.location.href);
  window.pwLoginToken = fetch(url, { credentials: 'same-origin', cache: 'no-store', headers: { Accept: 'application/json' } })
    .then(function (res) { return res.ok ? res.json() : null; })
    .then(function (body) {
      if (!body || typeof body.token !== 'string' || !window.ui) return false;
      window.ui.preauthorizeApiKey('admin', body.token);
      return true;
    })
    .catch(function () { return false; });
`) as () => void;
