import { Controller, Get } from '@nestjs/common';

@Controller('health')
export class HealthController {
  /** Liveness: the process answers. No I/O, so it is also the benchmark's baseline. */
  @Get()
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }
}
