import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ORDER_STATUSES } from '../order.state';
import { PAYMENT_STATUSES } from '../payment.state';
import { FULFILLMENT_STATUSES } from '../../common/order-views';
import { OrderItemDto, ShipToDto } from './order.dto';

export class PaymentView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) orderId: string;
  @ApiProperty({ example: 'stripe' }) provider: string;
  @ApiProperty({ example: 'pi_3QxAbc' }) providerPaymentId: string;
  @ApiProperty({ example: 'acct_1' }) merchantAccountId: string;
  @ApiProperty({ enum: PAYMENT_STATUSES }) status: string;
  @ApiProperty({ example: '49.90' }) amount: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ example: '0.00' }) refundedAmount: string;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}

export class FulfillmentSummary {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: FULFILLMENT_STATUSES }) status: string;
  @ApiProperty({ example: 'default' }) carrier: string;
  @ApiProperty({ nullable: true, type: String, example: 'shp_123' }) shipmentId: string | null;
}

export class OrderView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ nullable: true, type: String, example: 'ORD-2026-0042' }) reference: string | null;
  @ApiProperty({ enum: ORDER_STATUSES }) status: string;
  @ApiProperty({ example: '49.90' }) amount: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ example: 'default' }) carrier: string;
  @ApiProperty({ nullable: true, type: String, example: 'acct_1Nv0FGQ9RKHgCVdK', description: 'The merchant account whose payments the order accepts; null when it names none.' })
  merchantAccountId: string | null;
  @ApiProperty({ type: ShipToDto }) shipTo: ShipToDto;
  @ApiProperty({ type: [OrderItemDto] }) items: OrderItemDto[];
  @ApiProperty({ type: [PaymentView] }) payments: PaymentView[];
  @ApiPropertyOptional({ type: FulfillmentSummary, nullable: true }) fulfillment: FulfillmentSummary | null;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}

export class OrderPage {
  @ApiProperty({ type: [OrderView] }) items: OrderView[];
  @ApiProperty({ nullable: true, type: String }) nextCursor: string | null;
}

export class PaymentPage {
  @ApiProperty({ type: [PaymentView] }) items: PaymentView[];
  @ApiProperty({ nullable: true, type: String }) nextCursor: string | null;
}
