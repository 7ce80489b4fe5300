import { Inject, Injectable } from '@nestjs/common';
import { resolveEndpoint, type ResolvedEndpoint } from '../config/endpoints';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS, PW_PROVIDERS } from '../config/tokens';
import type { PaymentCommand, PaymentCommands, ProviderAdapter, ProviderEndpoint } from '../providers/provider';

/** Where a command for a payment goes: the provider's commands and the endpoint whose credentials send it. */
export type CommandRoute =
  | { ok: true; commands: PaymentCommands; endpoint: ProviderEndpoint }
  | { ok: false; detail: string };

/**
 * Which endpoint sends a payment's commands (docs/commands.md): the first configured endpoint of the
 * payment's provider that serves its merchant account and holds API credentials. A provider
 * without commands, or without such an endpoint, takes none (`422 not_supported`). Resolved from
 * the configuration at start; the credentials never leave the endpoint object.
 */
@Injectable()
export class CommandEndpoints {
  private readonly endpoints: ResolvedEndpoint[];

  constructor(@Inject(PW_OPTIONS) options: ResolvedOptions, @Inject(PW_PROVIDERS) private readonly providers: ReadonlyMap<string, ProviderAdapter>) {
    this.endpoints = options.endpoints.map((e) => resolveEndpoint(e, providers));
  }

  route(provider: string, merchantAccountId: string, type: PaymentCommand['type']): CommandRoute {
    const adapter = this.providers.get(provider);
    const commands = adapter?.commands;
    if (!adapter || !commands) return { ok: false, detail: `the module sends no commands to ${provider}` };
    if (!commands.types.includes(type)) return { ok: false, detail: `${provider} takes no ${type} through the module` };
    const serving = this.endpoints.filter((e) => e.provider === adapter && serves(e, merchantAccountId));
    const ready = serving.find((e) => commands.ready(e.settings));
    if (!ready) {
      return {
        ok: false,
        detail:
          serving.length === 0
            ? `no ${provider} endpoint serves merchant account "${merchantAccountId}"`
            : `no ${provider} endpoint of merchant account "${merchantAccountId}" has API credentials`,
      };
    }
    return { ok: true, commands, endpoint: ready.settings };
  }
}

function serves(e: ResolvedEndpoint, account: string): boolean {
  if (e.merchantAccountIds === '*') return true;
  if (e.merchantAccountIds !== null) return e.merchantAccountIds.includes(account);
  return e.merchantAccountId === account;
}
