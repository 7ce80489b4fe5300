import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsNotEmpty, IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';
import { PageQuery } from '../../common/pagination';
import { PROVIDER_NAMES, ProviderName } from '../../config/options';

export class RegisterPaymentDto {
  @ApiProperty({ enum: PROVIDER_NAMES, example: 'stripe' })
  @IsIn(PROVIDER_NAMES as unknown as string[], { message: `provider must be one of ${PROVIDER_NAMES.join(', ')}` })
  provider: ProviderName;

  @ApiProperty({ example: 'pi_3QxAbc', description: "The provider's id of the payment (invoice, PaymentIntent…)." })
  @IsString()
  @IsNotEmpty()
  @MaxLength(255)
  providerPaymentId: string;

  @ApiPropertyOptional({
    example: 'acct_1',
    description: "May be left out when the provider's endpoints name a single merchant account.",
  })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(255)
  merchantAccountId?: string;
}

export class ListPaymentsQuery extends PageQuery {
  @ApiPropertyOptional({ enum: PROVIDER_NAMES })
  @IsOptional()
  @IsIn(PROVIDER_NAMES as unknown as string[], { message: `provider must be one of ${PROVIDER_NAMES.join(', ')}` })
  provider?: ProviderName;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(255)
  providerPaymentId?: string;

  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID('all', { message: 'orderId must be a UUID' })
  orderId?: string;
}
