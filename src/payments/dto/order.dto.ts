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
import { ORDER_STATUSES, OrderStatus } from '../order.state';

export class ShipToDto {
  @ApiProperty({ example: 'Ada Lovelace' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  name: string;

  @ApiProperty({ example: '12 Analytical Row' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  line1: string;

  @ApiPropertyOptional({ example: 'Flat 3' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  line2?: string;

  @ApiProperty({ example: 'London' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  city: string;

  @ApiProperty({ example: 'N1 9GU' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(20)
  postalCode: string;

  @ApiProperty({ example: 'GB', description: 'ISO 3166-1 alpha-2, upper case' })
  @IsISO31661Alpha2({ message: 'country must be an ISO 3166-1 alpha-2 code in upper case' })
  @Matches(/^[A-Z]{2}$/, { message: 'country must be an ISO 3166-1 alpha-2 code in upper case' })
  country: string;
}

export class OrderItemDto {
  @ApiProperty({ example: 'SKU-42' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  sku: string;

  @ApiProperty({ example: 1, minimum: 1 })
  @IsInt({ message: 'quantity must be an integer' })
  @Min(1)
  quantity: number;
}

export class CreateOrderDto {
  @ApiPropertyOptional({ example: 'ORD-2026-0042', description: 'Unique when given.' })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  reference?: string;

  @ApiProperty({ example: '49.90', description: "Decimal string in the currency's exponent; never a float." })
  @IsString({ message: 'amount must be a decimal string such as "49.90"' })
  @Matches(/^\d{1,18}(\.\d+)?$/, { message: 'amount must be a decimal string such as "49.90"' })
  amount: string;

  @ApiProperty({ example: 'EUR', description: 'ISO 4217, upper case.' })
  @IsString()
  @Matches(/^[A-Z]{3}$/, { message: 'currency must be an ISO 4217 code in upper case' })
  currency: string;

  @ApiPropertyOptional({ example: 'default', description: 'A configured carrier; default `default`.' })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  carrier?: string;

  @ApiProperty({ type: ShipToDto })
  @IsDefined({ message: 'shipTo is required' })
  @IsObject({ message: 'shipTo must be an object' })
  @ValidateNested()
  @Type(() => ShipToDto)
  shipTo: ShipToDto;

  @ApiProperty({ type: [OrderItemDto] })
  @IsDefined({ message: 'items is required' })
  @IsArray()
  @ArrayMinSize(1, { message: 'items must have at least one entry' })
  @ArrayMaxSize(500)
  @ValidateNested({ each: true })
  @Type(() => OrderItemDto)
  items: OrderItemDto[];
}

export class MarkPaidDto {
  @ApiProperty({ example: 'Bank transfer received, ticket #4411' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(500)
  reason: string;
}

export class ListOrdersQuery extends PageQuery {
  @ApiPropertyOptional({ enum: ORDER_STATUSES })
  @IsOptional()
  @IsIn(ORDER_STATUSES as unknown as string[], { message: `status must be one of ${ORDER_STATUSES.join(', ')}` })
  status?: OrderStatus;
}
