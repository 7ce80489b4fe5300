import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsNotEmpty, IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';
import { PageQuery } from '../../common/pagination';
import { PROVIDER_NAMES, ProviderName } from '../../config/options';
import { IsPrintableId } from './printable-id';

export class RegisterPaymentDto {
  @ApiProperty({ enum: PROVIDER_NAMES, example: 'stripe' })
  @IsIn(PROVIDER_NAMES as unknown as string[], { message: `provider must be one of ${PROVIDER_NAMES.join(', ')}` })
  provider: ProviderName;

  @ApiProperty({
    example: 'pi_3QxAbc',
    description: "The provider's id of the payment (invoice, PaymentIntent…): printable text of at most 255 characters.",
  })
  @IsPrintableId()
  @IsNotEmpty()
  @IsString()
  providerPaymentId: string;

  @ApiPropertyOptional({
    example: 'acct_1',
    description: "May be left out when the provider's endpoints name a single merchant account. Printable text of at most 255 characters.",
  })
  @IsPrintableId()
  @IsNotEmpty()
  @IsString()
  @IsOptional()
  merchantAccountId?: string;
}

export class ListPaymentsQuery extends PageQuery {
  @ApiPropertyOptional({ enum: PROVIDER_NAMES })
  @IsIn(PROVIDER_NAMES as unknown as string[], { message: `provider must be one of ${PROVIDER_NAMES.join(', ')}` })
  @IsOptional()
  provider?: ProviderName;

  @ApiPropertyOptional()
  @MaxLength(255)
  @IsNotEmpty()
  @IsString()
  @IsOptional()
  providerPaymentId?: string;

  @ApiPropertyOptional({ format: 'uuid' })
  @IsUUID('all', { message: 'orderId must be a UUID' })
  @IsOptional()
  orderId?: string;
}
