import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ORDER_STATUSES } from '../order.state';
import { PAYMENT_STATUSES } from '../payment.state';
import { FULFILLMENT_STATUSES } from '../../common/order-views';
import { OrderItemDto, ShipToDto } from './order.dto';

export class PaymentView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) orderId: string;
  @ApiProperty({ example: 'stripe', description: "The provider's name (a built-in one, or one the host registered)" }) provider: string;
  @ApiProperty({ example: 'pi_3QxAbc' }) providerPaymentId: string;
  @ApiProperty({ example: 'acct_demo' }) merchantAccountId: string;
  @ApiProperty({ enum: PAYMENT_STATUSES, example: 'pending' }) status: string;
  @ApiProperty({ example: '49.90' }) amount: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ example: '0.00' }) refundedAmount: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-29T09:58:00.000Z' }) createdAt: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-29T10:00:00.456Z' }) updatedAt: string;
}

export class FulfillmentSummary {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: FULFILLMENT_STATUSES, example: 'dispatched' }) status: string;
  @ApiProperty({ example: 'default' }) carrier: string;
  @ApiProperty({ nullable: true, type: String, example: 'shp_123' }) shipmentId: string | null;
}

export class OrderView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ nullable: true, type: String, example: null, description: 'The reference the order was placed with; null when it was given none' })
  reference: string | null;
  @ApiProperty({ enum: ORDER_STATUSES, example: 'awaiting_payment' }) status: string;
  @ApiProperty({ example: '49.90' }) amount: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ example: 'default' }) carrier: string;
  @ApiProperty({ nullable: true, type: String, example: null, description: 'The merchant account whose payments the order accepts (e.g. `acct_demo`); null when it names none.' })
  merchantAccountId: string | null;
  @ApiProperty({ type: ShipToDto }) shipTo: ShipToDto;
  @ApiProperty({ type: [OrderItemDto] }) items: OrderItemDto[];
  // The examples are those of an order just placed, as POST /orders answers its example.
  @ApiProperty({ type: [PaymentView], example: [] }) payments: PaymentView[];
  @ApiPropertyOptional({ type: FulfillmentSummary, nullable: true, example: null, description: 'null until the order is paid' }) fulfillment: FulfillmentSummary | null;
  @ApiProperty({ format: 'date-time', example: '2026-11-29T09:58:00.000Z' }) createdAt: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-29T09:58:00.000Z' }) updatedAt: string;
}

/** `nextCursor` of every page: what the next page's `cursor` is, null on the last page. */
export const NEXT_CURSOR = {
  nullable: true,
  type: String,
  example: null,
  description: "The next page's `cursor`; null on the last page",
} as const;

export class OrderPage {
  @ApiProperty({ type: [OrderView] }) items: OrderView[];
  @ApiProperty(NEXT_CURSOR) nextCursor: string | null;
}

export class PaymentPage {
  @ApiProperty({ type: [PaymentView] }) items: PaymentView[];
  @ApiProperty(NEXT_CURSOR) nextCursor: string | null;
}

/** One move in an order's history (docs/rest-api.md#order-history). */
export class HistoryItemView {
  @ApiProperty({ example: '2026-12-07T10:00:00.000Z', description: 'When the move was made' }) at: string;
  @ApiProperty({ enum: ['order', 'payment', 'fulfillment', 'refund'] }) entity: 'order' | 'payment' | 'fulfillment' | 'refund';
  @ApiProperty({ format: 'uuid', description: 'The id of the order, payment or fulfillment that moved' }) entityId: string;
  @ApiProperty({ type: String, nullable: true, example: 'awaiting_payment', description: 'null: the move created it' }) from: string | null;
  @ApiProperty({ example: 'paid' }) to: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    example: { kind: 'delivery', deliveryId: '0193a1b2-0000-7000-8000-000000000001', eventId: 'evt_1', provider: 'stripe' },
    description:
      'Why: `{"kind":"delivery","deliveryId","eventId","provider"}` (a webhook\'s processing; `deliveryId` is the delivery\'s `id`), ' +
      '`{"kind":"api","action"}` (`place`, `mark-paid`, `cancel`, `register-payment`, `retry`), `{"kind":"carrier","shipmentId"}`, ' +
      'or `{"kind":"backfill"}` (written from the rows when the history was created)',
  })
  cause: Record<string, unknown>;
}

export class OrderHistoryView {
  @ApiProperty({ type: [HistoryItemView], description: 'Oldest first' }) items: HistoryItemView[];
}
