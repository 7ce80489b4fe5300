import { IsOptional, IsString } from 'class-validator';
import { PROVIDER_NAMES } from '../config/options';
import { ValidationFailed } from '../common/domain-error';
import { ApiValidationPipe } from './api-errors';
import { IsKnownProvider, KNOWN_PROVIDERS } from './known-provider';

class Body {
  @IsKnownProvider()
  provider: string;

  @IsString()
  @IsOptional()
  note?: string;
}

const table = new Map([...PROVIDER_NAMES, 'acme'].map((name) => [name, {}]));

async function details(pipe: ApiValidationPipe, value: unknown): Promise<unknown> {
  try {
    await pipe.transform(value, { type: 'body', metatype: Body });
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationFailed);
    return (err as ValidationFailed).details;
  }
  return 'passed';
}

describe('@IsKnownProvider() through the module pipe', () => {
  const pipe = new ApiValidationPipe(table);

  it("accepts the module's providers, the host's own among them; the names do not stay on the value", async () => {
    const value = await pipe.transform({ provider: 'acme' }, { type: 'body', metatype: Body });
    expect(value).toEqual({ provider: 'acme' });
    expect(Object.getOwnPropertySymbols(value)).not.toContain(KNOWN_PROVIDERS);
    expect(await details(pipe, { provider: 'stripe' })).toBe('passed');
  });

  it.each([['acmee'], [42], [''], [null]])('refuses %j with every known name, as a static list would say it', async (provider) => {
    expect(await details(pipe, { provider })).toEqual([{ field: 'provider', message: `provider must be one of ${[...PROVIDER_NAMES, 'acme'].join(', ')}` }]);
  });

  it('beside other invalid fields, every field is answered, in their order', async () => {
    expect(await details(pipe, { provider: 'acmee', note: 7 })).toEqual([
      { field: 'provider', message: expect.stringMatching(/^provider must be one of .*, acme$/) },
      { field: 'note', message: 'note must be a string' },
    ]);
  });

  it('a pipe without the module (no table) knows the built-in providers only', async () => {
    const plain = new ApiValidationPipe();
    expect(await details(plain, { provider: 'stripe' })).toBe('passed');
    expect(await details(plain, { provider: 'acme' })).toEqual([{ field: 'provider', message: `provider must be one of ${PROVIDER_NAMES.join(', ')}` }]);
  });
});
