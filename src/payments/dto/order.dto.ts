import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsDefined,
  IsIn,
  IsInt,
  IsISO31661Alpha2,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { PageQuery } from '../../common/pagination';
import { IsPrintableId } from './printable-id';
import { ORDER_STATUSES, OrderStatus } from '../order.state';

export class ShipToDto {
  @ApiProperty({ example: 'Ada Lovelace' })
  @MaxLength(200)
  @IsNotEmpty()
  @IsString()
  name: string;

  @ApiProperty({ example: '12 Analytical Row' })
  @MaxLength(200)
  @IsNotEmpty()
  @IsString()
  line1: string;

  @ApiPropertyOptional({ example: 'Flat 3', description: 'Left out of the examples.' })
  @MaxLength(200)
  @IsString()
  @IsOptional()
  line2?: string;

  @ApiProperty({ example: 'London' })
  @MaxLength(100)
  @IsNotEmpty()
  @IsString()
  city: string;

  @ApiProperty({ example: 'N1 9GU' })
  @MaxLength(20)
  @IsNotEmpty()
  @IsString()
  postalCode: string;

  @ApiProperty({ example: 'GB', description: 'ISO 3166-1 alpha-2, upper case' })
  @Matches(/^[A-Z]{2}$/, { message: 'country must be an ISO 3166-1 alpha-2 code in upper case' })
  @IsISO31661Alpha2({ message: 'country must be an ISO 3166-1 alpha-2 code in upper case' })
  country: string;
}

export class OrderItemDto {
  @ApiProperty({ example: 'SKU-42' })
  @MaxLength(100)
  @IsNotEmpty()
  @IsString()
  sku: string;

  @ApiProperty({ type: 'integer', example: 1, minimum: 1 })
  @Min(1)
  @IsInt({ message: 'quantity must be an integer' })
  quantity: number;
}

export class CreateOrderDto {
  @ApiPropertyOptional({
    example: 'ORD-2026-0042',
    description: 'Unique when given (a second order with it answers 409 reference_taken): the example body leaves it out, so that every Execute places an order.',
  })
  @IsPrintableId(100)
  @IsNotEmpty()
  @IsString()
  @IsOptional()
  reference?: string;

  @ApiProperty({ example: '49.90', description: "Decimal string in the currency's exponent; never a float." })
  @Matches(/^\d{1,18}(\.\d+)?$/, { message: 'amount must be a decimal string such as "49.90"' })
  @IsString({ message: 'amount must be a decimal string such as "49.90"' })
  amount: string;

  @ApiProperty({ example: 'EUR', description: 'ISO 4217, upper case.' })
  @Matches(/^[A-Z]{3}$/, { message: 'currency must be an ISO 4217 code in upper case' })
  @IsString()
  currency: string;

  @ApiPropertyOptional({ example: 'default', description: 'A configured carrier; default `default`.' })
  @IsNotEmpty()
  @IsString()
  @IsOptional()
  carrier?: string;

  @ApiPropertyOptional({
    example: 'acct_demo',
    description:
      'The merchant account whose payments the order accepts (Stripe `acct_…`, a Factuarea account UUID, an endpoint\'s label): ' +
      'an event or a registration of another account cannot pay, refund or attach a payment to it. Left out: the order names ' +
      'none, and on an endpoint that serves many accounts only the accounts of its registered payments may touch it.',
  })
  @IsPrintableId()
  @IsNotEmpty()
  @IsString()
  @IsOptional()
  merchantAccountId?: string;

  @ApiProperty({ type: ShipToDto })
  @ValidateNested()
  @IsObject({ message: 'shipTo must be an object' })
  @IsDefined({ message: 'shipTo is required' })
  @Type(() => ShipToDto)
  shipTo: ShipToDto;

  @ApiProperty({ type: [OrderItemDto] })
  @ValidateNested({ each: true })
  @ArrayMaxSize(500)
  @ArrayMinSize(1, { message: 'items must have at least one entry' })
  @IsArray()
  @IsDefined({ message: 'items is required' })
  @Type(() => OrderItemDto)
  items: OrderItemDto[];
}

export class MarkPaidDto {
  @ApiProperty({ example: 'Bank transfer received, ticket #4411' })
  @MaxLength(500)
  @IsNotEmpty()
  @IsString()
  reason: string;
}

export class ListOrdersQuery extends PageQuery {
  @ApiPropertyOptional({ enum: ORDER_STATUSES })
  @IsIn(ORDER_STATUSES as unknown as string[], { message: `status must be one of ${ORDER_STATUSES.join(', ')}` })
  @IsOptional()
  status?: OrderStatus;

  // No example: Try it out fills a parameter's example in, and a filter filled in hides the other orders.
  @ApiPropertyOptional({ description: 'Only the orders that name this merchant account (e.g. `acct_demo`).' })
  @IsPrintableId()
  @IsNotEmpty()
  @IsString()
  @IsOptional()
  merchantAccountId?: string;
}
