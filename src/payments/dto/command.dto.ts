import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Equals, IsBoolean, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { PageQuery } from '../../common/pagination';
import { REFUND_STATUSES } from '../refund.state';

const AMOUNT = /^\d{1,18}(\.\d+)?$/;
const AMOUNT_MESSAGE = 'amount must be a decimal string such as "49.90"';

/** `POST /orders/{id}/refunds` (CONTRACT §3.1). */
export class RefundRequestDto {
  @ApiPropertyOptional({ example: '10.00', description: 'Left out: all that is still refundable.' })
  @Matches(AMOUNT, { message: AMOUNT_MESSAGE })
  @IsString({ message: AMOUNT_MESSAGE })
  @IsOptional()
  amount?: string;

  @ApiPropertyOptional({ example: 'Returned item', maxLength: 500 })
  @MaxLength(500)
  @IsString()
  @IsOptional()
  reason?: string;
}

/** `POST /orders/{id}/capture`. */
export class CaptureRequestDto {
  @ApiPropertyOptional({ example: '49.90', description: "Left out: the payment's whole amount." })
  @Matches(AMOUNT, { message: AMOUNT_MESSAGE })
  @IsString({ message: AMOUNT_MESSAGE })
  @IsOptional()
  amount?: string;
}

/** `POST /orders/{id}/cancel`: `{"refund": true}` cancels a paid order whose shipment has not begun, with a full refund. */
export class CancelRequestDto {
  @ApiPropertyOptional({ example: true, description: 'Only `true` is accepted: cancel a paid order whose shipment has not begun, and refund it in full.' })
  @Equals(true, { message: 'refund must be true when given' })
  @IsBoolean({ message: 'refund must be true when given' })
  @IsOptional()
  refund?: boolean;
}

export class RefundView {
  @ApiProperty() id: string;
  @ApiProperty() orderId: string;
  @ApiProperty() paymentId: string;
  @ApiProperty() provider: string;
  @ApiProperty({ example: '10.00' }) amount: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ type: String, nullable: true }) reason: string | null;
  @ApiProperty({ enum: REFUND_STATUSES }) status: (typeof REFUND_STATUSES)[number];
  @ApiProperty({ type: String, nullable: true, description: "The provider's id of the refund, once it accepted it." }) providerRefundId: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Why the provider refused it, or why it failed.' }) failureReason: string | null;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}

export class RefundPage {
  @ApiProperty({ type: [RefundView] }) items: RefundView[];
  @ApiProperty({ type: String, nullable: true }) nextCursor: string | null;
}

export class ListRefundsQuery extends PageQuery {}
