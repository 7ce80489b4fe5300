import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsNotEmpty, IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';
import { PageQuery } from '../../common/pagination';
import { PROVIDER_NAMES, ProviderName } from '../../config/options';
import { IsKnownProvider, PROVIDER_DESCRIPTION } from '../../http/known-provider';
import { IsPrintableId } from './printable-id';

export class RegisterPaymentDto {
  @ApiProperty({ enum: PROVIDER_NAMES, example: 'stripe', description: PROVIDER_DESCRIPTION })
  @IsKnownProvider()
  provider: ProviderName | (string & {});

  @ApiProperty({
    example: 'pi_3QxAbc',
    description: "The provider's id of the payment (invoice, PaymentIntent…): printable text of at most 255 characters.",
  })
  @IsPrintableId()
  @IsNotEmpty()
  @IsString()
  providerPaymentId: string;

  @ApiPropertyOptional({
    example: 'acct_demo',
    description: "May be left out when the provider's endpoints name a single merchant account. Printable text of at most 255 characters.",
  })
  @IsPrintableId()
  @IsNotEmpty()
  @IsString()
  @IsOptional()
  merchantAccountId?: string;
}

export class ListPaymentsQuery extends PageQuery {
  @ApiPropertyOptional({ enum: PROVIDER_NAMES, description: PROVIDER_DESCRIPTION })
  @IsKnownProvider()
  @IsOptional()
  provider?: ProviderName | (string & {});

  @ApiPropertyOptional({ description: "The provider's id of the payment (e.g. `pi_3QxAbc`)." })
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
