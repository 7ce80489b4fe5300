import { Controller, HttpCode, Inject, Logger, Param, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiExcludeEndpoint, ApiOkResponse, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS } from '../config/tokens';
import { setHeader } from '../http/platform';
import { AdapterCallError, callAdapter, describeThrown, type DeliveryAnswer, type ProviderAdapter, type RecordedEvent } from '../providers';
import { DeliveryObserver } from './delivery-observer';
import { InboxIngestService, IngestAnswer } from './inbox-ingest.service';
import { WebhookRequest, WebhookSignatureGuard } from './webhook-signature.guard';
import { WebhookErrorFilter } from './webhook-error.filter';
import { WebhookError } from './webhook.errors';

@ApiTags('webhooks')
@Controller('webhooks')
@UseFilters(WebhookErrorFilter)
export class WebhooksController {
  private readonly logger = new Logger('WebhookReceive');
  private readonly adapterTimeoutMs: number;

  constructor(
    private readonly ingest: InboxIngestService,
    private readonly observer: DeliveryObserver,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
  ) {
    this.adapterTimeoutMs = options.tuning.adapterTimeoutMs;
  }

  /**
   * Receives one delivery: authentic and well-formed (guard, through its provider's adapter), its
   * events recorded once, then acknowledged. 200 only once every event's row is committed.
   */
  @Post(':endpointId')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'receiveWebhook',
    summary: 'Receive a signed payment webhook',
    description:
      'The body is read as raw bytes whatever the Content-Type, and the signature checked over them before it is ' +
      'parsed (Paymos `X-Webhook-Signature`, Factuarea `Factuarea-Signature`, Stripe `Stripe-Signature`, Standard ' +
      'Webhooks `webhook-signature`). 200 only once the delivery is committed; 503 for anything transient; 4xx ' +
      'only for what a retry cannot fix. No admin token.',
    // Authenticated by the provider's signature, not by a security scheme of this document.
    security: [],
  })
  @ApiParam({ name: 'endpointId', example: 'stripe-main', description: 'A configured endpoint id' })
  @ApiConsumes('application/json')
  @ApiBody({
    description: "The provider's event envelope, exactly as signed",
    schema: { type: 'object', example: { id: 'evt_1QxAbcDEF', type: 'payment_intent.succeeded', data: { object: { id: 'pi_3QxAbc' } } } },
  })
  @ApiOkResponse({
    description: 'Recorded (accepted) or already recorded (duplicate)',
    schema: {
      type: 'object',
      properties: { status: { type: 'string', enum: ['accepted', 'duplicate'] }, eventId: { type: 'string' } },
      example: { status: 'accepted', eventId: 'evt_1QxAbcDEF' },
    },
  })
  @ApiResponse({ status: 400, description: 'Authentic but malformed', schema: { example: { error: 'malformed_payload', detail: 'the body is not JSON' } } })
  @ApiResponse({ status: 401, description: 'missing_signature, invalid_signature or timestamp_out_of_tolerance', schema: { example: { error: 'invalid_signature' } } })
  @ApiResponse({ status: 404, description: 'Unknown endpoint', schema: { example: { error: 'unknown_endpoint' } } })
  @ApiResponse({ status: 413, description: 'Body over WEBHOOK_MAX_BODY_BYTES', schema: { example: { error: 'payload_too_large' } } })
  @ApiResponse({
    status: 429,
    description: 'An unsigned hint (Mollie) from an address that named too many payments the provider does not have: not checked, retry later',
    schema: { example: { error: 'rate_limited' } },
  })
  @ApiResponse({ status: 503, description: 'Not recorded (database down or slow): retry', schema: { example: { error: 'unavailable' } } })
  @UseGuards(WebhookSignatureGuard)
  async receive(
    @Param('endpointId') _endpointId: string,
    @Req() req: WebhookRequest,
    @Res({ passthrough: true }) res: unknown,
  ): Promise<IngestAnswer | string> {
    const { endpoint, events } = req.verifiedDelivery!;
    this.observer.note(req, { eventId: events[0].eventId });
    const receipts = this.observer.startReceipts(req, endpoint, events);
    let recorded: IngestAnswer[];
    try {
      recorded = await this.ingest.record(endpoint, events, req.headers, 'webhook', receipts?.map((r) => r?.traceparent ?? null));
    } catch (err) {
      receipts?.forEach((r) => r?.end(err instanceof WebhookError ? err.code : 'unavailable'));
      throw err;
    }
    receipts?.forEach((r, i) => r?.end(recorded[i].status));
    // Every event of the delivery is committed: the delivery's answer, `accepted` if any was new.
    this.observer.note(req, { answer: recorded.some((r) => r.status === 'accepted') ? 'accepted' : 'duplicate' });
    if (!endpoint.provider.answer) return recorded[0];
    try {
      const answer = await adapterAnswer(endpoint.provider, recorded, this.adapterTimeoutMs);
      setHeader(res, 'Content-Type', answer.contentType);
      return answer.body;
    } catch (err) {
      // Recorded, but not answered as the provider waits for: it retries, and is answered duplicate.
      this.logger.error(`delivery to ${endpoint.id} recorded, its answer failed: ${describeThrown(err)}`);
      throw new WebhookError('unavailable');
    }
  }

  /**
   * `POST /webhooks` and `/webhooks/` name no endpoint: the same 404 `unknown_endpoint` (the guard
   * answers it, counted and logged like any delivery), not the framework's page. Deeper paths get
   * the same answer from configurePaymentWebhooksApp (a wildcard route is written differently on
   * Express and Fastify).
   */
  @Post()
  @ApiExcludeEndpoint()
  @UseGuards(WebhookSignatureGuard)
  noEndpoint(): never {
    throw new WebhookError('unknown_endpoint');
  }
}

const HEADER_VALUE = /^[\t\x20-\x7e]+$/;

/** The adapter's answer to a recorded delivery, awaited within `timeoutMs`: `{ contentType, body }` of text, or AdapterCallError. */
async function adapterAnswer(provider: ProviderAdapter, recorded: readonly RecordedEvent[], timeoutMs: number): Promise<DeliveryAnswer> {
  const what = `provider "${provider.name}" answer`;
  const answer: unknown = await callAdapter({ what, timeoutMs, call: () => provider.answer!(recorded) });
  const { contentType, body } = (answer ?? {}) as { contentType?: unknown; body?: unknown };
  // A content type must be one header value: no line break (nor any other control character) in it.
  if (typeof contentType !== 'string' || !HEADER_VALUE.test(contentType) || typeof body !== 'string') {
    throw new AdapterCallError('provider_adapter_invalid', `${what} returned no { contentType, body } of text`);
  }
  return { contentType, body };
}
