import { Inject, Injectable } from '@nestjs/common';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS, PW_PROVIDERS } from '../config/tokens';
import type { ProviderAdapter } from '../providers';
import { ResolvedEndpoint, resolveEndpoint } from './signature-verifier';

/** The configured endpoints, keys decoded once at start. */
@Injectable()
export class EndpointRegistry {
  private readonly byId: Map<string, ResolvedEndpoint>;

  constructor(@Inject(PW_OPTIONS) options: ResolvedOptions, @Inject(PW_PROVIDERS) providers: ReadonlyMap<string, ProviderAdapter>) {
    this.byId = new Map(options.endpoints.map((definition) => [definition.id, resolveEndpoint(definition, providers)]));
  }

  get(id: string): ResolvedEndpoint | undefined {
    return this.byId.get(id);
  }

  all(): ResolvedEndpoint[] {
    return [...this.byId.values()];
  }
}
