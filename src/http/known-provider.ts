import { ValidateBy, ValidationArguments, ValidationOptions } from 'class-validator';
import { PROVIDER_NAMES } from '../config/options';

/**
 * Where the validation pipe puts the names of the providers the module knows (the built-in ones
 * and the host's own) on the object it validates, for `@IsKnownProvider()` to read: the names are
 * the module's, not a constant of the DTO. A symbol, so the whitelist never sees it.
 */
export const KNOWN_PROVIDERS = Symbol('knownProviders');

export const IS_KNOWN_PROVIDER = 'isKnownProvider';

/** The names known where `object` is validated: the pipe's, else the built-in ones. */
export function knownProviderNames(object: object | undefined): readonly string[] {
  return (object as { [KNOWN_PROVIDERS]?: readonly string[] } | undefined)?.[KNOWN_PROVIDERS] ?? PROVIDER_NAMES;
}

/** The message of a name the module does not know, as a static `@IsIn` of the names would say it. */
export function unknownProviderMessage(names: readonly string[]): string {
  return `provider must be one of ${names.join(', ')}`;
}

/**
 * The name of a provider the module knows: a built-in one or one the host registered
 * (`providers` option), so a payment of a host's own provider can be registered and listed.
 */
export function IsKnownProvider(validationOptions?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: IS_KNOWN_PROVIDER,
      validator: {
        validate: (value: unknown, args?: ValidationArguments) => typeof value === 'string' && knownProviderNames(args?.object).includes(value),
        defaultMessage: (args?: ValidationArguments) => unknownProviderMessage(knownProviderNames(args?.object)),
      },
    },
    validationOptions,
  );
}

/** What the API documents of a `provider`: the enum lists the built-in names, and a host's own are accepted too. */
export const PROVIDER_DESCRIPTION =
  "A built-in provider's name, or that of a provider the host registered (`providers` option); another name is a 400.";
