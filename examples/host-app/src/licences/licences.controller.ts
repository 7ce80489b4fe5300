import { Controller, Get } from '@nestjs/common';
import { Licence } from './licence.entity.js';
import { LicenceGrants } from './licence-grants.js';

/** `/api/licences`: the host's own route over its own table. */
@Controller('licences')
export class LicencesController {
  constructor(private readonly licences: LicenceGrants) {}

  @Get()
  list(): Promise<Licence[]> {
    return this.licences.list();
  }
}
