import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Equals, IsBoolean, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { PageQuery } from '../../common/pagination';
import { REFUND_STATUSES } from '../refund.state';
import { NEXT_CURSOR } from './views';

const AMOUNT = /^\d{1,18}(\.\d+)?$/;
const AMOUNT_MESSAGE = 'amount must be a decimal string such as "49.90"';

/** `POST /orders/{id}/refunds` (docs/commands.md). */
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
  @ApiProperty({ format: 'uuid', example: '0193a1b5-7c2d-7e01-9a3b-4c5d6e7f8091' }) id: string;
  @ApiProperty({ format: 'uuid', example: '0193a1b2-4f1e-7c00-8d2a-1b2c3d4e5f60' }) orderId: string;
  @ApiProperty({ format: 'uuid', example: '0193a1b3-5a6b-7c7d-8e9f-0a1b2c3d4e5f' }) paymentId: string;
  @ApiProperty({ example: 'stripe' }) provider: string;
  @ApiProperty({ example: '10.00' }) amount: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ type: String, nullable: true, example: 'Returned item' }) reason: string | null;
  @ApiProperty({ enum: REFUND_STATUSES }) status: (typeof REFUND_STATUSES)[number];
  @ApiProperty({ type: String, nullable: true, example: 're_3PqL2x2eZvKYlo2C0n8Xb1aQ', description: "The provider's id of the refund, once it accepted it." }) providerRefundId: string | null;
  @ApiProperty({ type: String, nullable: true, example: null, description: 'Why the provider refused it, or why it failed.' }) failureReason: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-12-07T10:05:00.000Z' }) createdAt: string;
  @ApiProperty({ format: 'date-time', example: '2026-12-07T10:05:01.000Z' }) updatedAt: string;
}

export class RefundPage {
  @ApiProperty({ type: [RefundView] }) items: RefundView[];
  @ApiProperty(NEXT_CURSOR) nextCursor: string | null;
}

export class ListRefundsQuery extends PageQuery {}
