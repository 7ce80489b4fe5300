/**
 * An optional peer package (a provider's official client), required the first time it is asked for
 * and never again: the package, or null when it is not installed, so that a host with no endpoint
 * of its provider never needs it. Any other failure to load it is thrown as it is, a dependency of
 * the package that is missing included (installing the package again would not fix that).
 */
export function optionalPackage<T>(name: string, load: () => T): () => T | null {
  let loaded: { pkg: T } | { missing: true } | undefined;
  return () => {
    if (loaded === undefined) {
      try {
        loaded = { pkg: load() };
      } catch (err) {
        const missing = (err as { code?: unknown } | null)?.code === 'MODULE_NOT_FOUND' && String((err as Error).message).includes(`'${name}'`);
        if (!missing) throw err;
        loaded = { missing: true };
      }
    }
    return 'pkg' in loaded ? loaded.pkg : null;
  };
}
