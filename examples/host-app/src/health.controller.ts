import { Controller, Get } from '@nestjs/common';

/** The host's own `/api/health`; the module's probes are at `/api/payments/health/{live,ready}`. */
@Controller('health')
export class HealthController {
  @Get()
  health(): { host: 'ok' } {
    return { host: 'ok' };
  }
}
