import { Controller, HttpCode, Param, Post, Req, UseFilters, UseGuards } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiExcludeEndpoint, ApiOkResponse, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { isUtf8 } from 'node:buffer';
import { exceedsJsonDepth, TOO_DEEP_DETAIL } from '../http/json-depth';
import { DeliveryObserver } from './delivery-observer';
import { InboxIngestService, IngestAnswer } from './inbox-ingest.service';
import { MalformedPayloadError } from './providers';
import { WebhookRequest, WebhookSignatureGuard } from './webhook-signature.guard';
import { WebhookErrorFilter } from './webhook-error.filter';
import { WebhookError } from './webhook.errors';

@ApiTags('webhooks')
@Controller('webhooks')
@UseFilters(WebhookErrorFilter)
export class WebhooksController {
  constructor(
    private readonly ingest: InboxIngestService,
    private readonly observer: DeliveryObserver,
  ) {}

  /**
   * Receives one delivery: authentic (guard), well-formed, recorded once, then acknowledged.
   * 200 only once the row is committed.
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
  @ApiResponse({ status: 503, description: 'Not recorded (database down or slow): retry', schema: { example: { error: 'unavailable' } } })
  @UseGuards(WebhookSignatureGuard)
  async receive(@Param('endpointId') _endpointId: string, @Req() req: WebhookRequest): Promise<IngestAnswer> {
    const { endpoint, rawBody } = req.verifiedDelivery!;
    // JSON is UTF-8: bytes that are not would be stored altered (replacement characters), so the
    // archive would no longer hold what was signed.
    if (!isUtf8(rawBody)) throw new WebhookError('malformed_payload', 'the body is not valid UTF-8');
    const text = rawBody.toString('utf8');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new WebhookError('malformed_payload', 'the body is not JSON');
    }
    // Nothing deeper than MAX_JSON_DEPTH is recorded: every reader of the archive recurses.
    if (exceedsJsonDepth(body)) throw new WebhookError('malformed_payload', TOO_DEEP_DETAIL);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new WebhookError('malformed_payload', 'the body is not a JSON object');
    }
    let identity;
    try {
      identity = endpoint.provider.identify(body as Record<string, unknown>, req.headers);
    } catch (err) {
      if (err instanceof MalformedPayloadError) throw new WebhookError('malformed_payload', err.detail);
      throw err;
    }
    this.observer.note(req, { eventId: identity.eventId });
    const answer = await this.ingest.record(endpoint, identity, req.headers, text);
    this.observer.note(req, { answer: answer.status });
    return answer;
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
