import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { existsSync } from 'node:fs';
import { AppModule } from './app.module';
import { loadStandaloneConfig, StandaloneConfig } from './config/env';
import { ConfigurationError } from './config/validate';
import { configurePaymentWebhooksApp } from './configure-app';
import { createLogger, PinoNestLogger } from './observability/logger';

function readConfig(): StandaloneConfig {
  try {
    // A local .env fills what the environment leaves unset (the environment wins).
    if (existsSync('.env')) process.loadEnvFile('.env');
    return loadStandaloneConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigurationError) {
      // One line, naming the variable; never the value.
      process.stderr.write(`Configuration error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

async function bootstrap(): Promise<void> {
  const config = readConfig();
  const pino = createLogger();
  const module = await AppModule.register(config, pino);
  const nestLogger = new PinoNestLogger(pino);
  const logger = new Logger('Main');
  if (config.runHttp) {
    const app = await NestFactory.create(module, { bodyParser: false, logger: nestLogger });
    configurePaymentWebhooksApp(app);
    app.enableShutdownHooks();
    await app.listen(config.port);
    logger.log(
      `listening on :${config.port} with ${config.options.endpoints.length} webhook endpoint(s); workers ${config.options.runWorkers ? 'on' : 'off'}`,
    );
  } else {
    const app = await NestFactory.createApplicationContext(module, { logger: nestLogger });
    app.enableShutdownHooks();
    logger.log('worker-only process started');
  }
}

void bootstrap().catch((err: Error) => {
  process.stderr.write(`Start failed: ${err.message}\n`);
  process.exit(1);
});
