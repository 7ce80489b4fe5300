import { Inject, Injectable } from '@nestjs/common';
import type { ResolvedOptions } from '../../config/options';
import { PW_CARRIER_ADAPTERS, PW_OPTIONS } from '../../config/tokens';
import type { CarrierAdapter } from './carrier';
import { HttpCarrierAdapter } from './http-carrier';

/** The carriers an order may name: the configured HTTP ones, and a host's own adapters. */
@Injectable()
export class CarrierRegistry {
  private readonly byName = new Map<string, CarrierAdapter>();

  constructor(
    @Inject(PW_OPTIONS) options: ResolvedOptions,
    @Inject(PW_CARRIER_ADAPTERS) custom: CarrierAdapter[],
  ) {
    for (const definition of options.carriers) {
      this.byName.set(definition.name, new HttpCarrierAdapter(definition, options.carrierTimeoutMs));
    }
    for (const adapter of custom) {
      if (this.byName.has(adapter.name)) throw new Error(`two carriers are named "${adapter.name}"`);
      this.byName.set(adapter.name, adapter);
    }
  }

  get(name: string): CarrierAdapter | undefined {
    return this.byName.get(name);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }
}
