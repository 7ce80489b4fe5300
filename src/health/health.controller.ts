import { ArgumentsHost, Catch, Controller, ExceptionFilter, Get, HttpCode, HttpException, UseFilters } from '@nestjs/common';
import { sendJson } from '../http/platform';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckResult, HealthCheckService } from '@nestjs/terminus';
import { DependenciesHealthIndicator } from './dependencies.health';

const HEALTH_EXAMPLE = { status: 'ok', info: {}, error: {}, details: {} };

/** Readiness answers its report as the health check wrote it (503 included), on either platform. */
@Catch(HttpException)
class HealthReportFilter implements ExceptionFilter {
  catch(err: HttpException, host: ArgumentsHost): void {
    sendJson(host.switchToHttp().getResponse(), err.getStatus(), err.getResponse());
  }
}

/** Liveness and readiness, without auth. */
@ApiTags('health')
@Controller('health')
@UseFilters(HealthReportFilter)
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly dependencies: DependenciesHealthIndicator,
  ) {}

  /** Liveness: the process answers. No I/O, so it is also the benchmark's baseline. */
  @Get()
  @HttpCode(200)
  // `security: []`: no auth, said explicitly in a document whose other routes need the admin token.
  @ApiOperation({
    operationId: 'checkLiveness',
    summary: 'Liveness',
    description: 'The process answers; checks nothing else.',
    security: [],
  })
  @ApiOkResponse({ schema: { example: HEALTH_EXAMPLE } })
  live(): HealthCheckResult {
    return { status: 'ok', info: {}, error: {}, details: {} };
  }

  /** Readiness: PostgreSQL and Redis answer; 503 when either does not. */
  @Get('ready')
  @HealthCheck()
  @ApiOperation({
    operationId: 'checkReadiness',
    summary: 'Readiness',
    description:
      'PostgreSQL and Redis answer; 503 when either is down. A dependency that is down says why in a fixed word ' +
      '(`unreachable`, `timeout`, `unexpected answer`), never the driver\'s message, which goes to the server\'s log.',
    security: [],
  })
  @ApiOkResponse({
    schema: {
      example: { status: 'ok', info: { database: { status: 'up' }, redis: { status: 'up' } }, error: {}, details: {} },
    },
  })
  @ApiServiceUnavailableResponse({
    schema: {
      example: {
        status: 'error',
        info: { database: { status: 'up' } },
        error: { redis: { status: 'down', message: 'unreachable' } },
        details: { database: { status: 'up' }, redis: { status: 'down', message: 'unreachable' } },
      },
    },
  })
  ready(): Promise<HealthCheckResult> {
    return this.health.check([() => this.dependencies.database(), () => this.dependencies.redis()]);
  }
}
