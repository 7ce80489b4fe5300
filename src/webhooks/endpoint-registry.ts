import { Inject, Injectable } from '@nestjs/common';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS } from '../config/tokens';
import { ResolvedEndpoint, resolveEndpoint } from './signature-verifier';

/** The configured endpoints, keys decoded once at start. */
@Injectable()
export class EndpointRegistry {
  private readonly byId: Map<string, ResolvedEndpoint>;

  constructor(@Inject(PW_OPTIONS) options: ResolvedOptions) {
    this.byId = new Map(options.endpoints.map((definition) => [definition.id, resolveEndpoint(definition)]));
  }

  get(id: string): ResolvedEndpoint | undefined {
    return this.byId.get(id);
  }

  all(): ResolvedEndpoint[] {
    return [...this.byId.values()];
  }
}
