import { Module } from '@nestjs/common';
import { LicenceGrants } from './licence-grants.js';
import { LicencesController } from './licences.controller.js';

/** The host's licences: granted on the module's `order.paid`, revoked on its `order.refunded`. */
@Module({
  controllers: [LicencesController],
  providers: [LicenceGrants],
})
export class LicencesModule {}
