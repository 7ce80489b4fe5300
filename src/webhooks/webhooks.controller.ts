import { Controller, HttpCode, Param, Post, Req, UseGuards } from '@nestjs/common';
import { InboxIngestService, IngestAnswer } from './inbox-ingest.service';
import { MalformedPayloadError } from './providers';
import { WebhookRequest, WebhookSignatureGuard } from './webhook-signature.guard';
import { WebhookError } from './webhook.errors';

@Controller('webhooks')
export class WebhooksController {
  constructor(private readonly ingest: InboxIngestService) {}

  /**
   * Receives one delivery: authentic (guard), well-formed, recorded once, then acknowledged.
   * 200 only once the row is committed.
   */
  @Post(':endpointId')
  @HttpCode(200)
  @UseGuards(WebhookSignatureGuard)
  async receive(@Param('endpointId') _endpointId: string, @Req() req: WebhookRequest): Promise<IngestAnswer> {
    const { endpoint, rawBody } = req.verifiedDelivery!;
    const text = rawBody.toString('utf8');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new WebhookError('malformed_payload', 'the body is not JSON');
    }
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
    return this.ingest.record(endpoint, identity, req.headers, text);
  }
}
