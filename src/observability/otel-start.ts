/**
 * The standalone service's first import (src/main.ts): starts OpenTelemetry when OTEL_* asks for
 * it, before `http`, `pg`, `ioredis` and Nest are loaded, so their instrumentations can patch
 * them. Only main.ts imports this; see ./otel-sdk.ts.
 */
import { startStandaloneTracing } from './otel-sdk';

startStandaloneTracing();
