import { Module } from '@nestjs/common';

/** Order and Payment aggregates, money, the lifecycle, the orders/payments API (next issue). */
@Module({})
export class PaymentsModule {}
