/**
 * A module loaded on first use and kept: `const execute = lazy(() => import('./execute'))`, then
 * `(await execute()).executeReadOnly(…)`. Every `import()` goes through the module loader again (its
 * resolve step, and under tsx the TypeScript loader's hooks: about 0.1 ms of CPU per call locally), so a
 * route that loads its use case lazily keeps the promise instead. A failed load is tried again next time.
 */
export function lazy<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => {
    if (!loaded) {
      const loading = load();
      loaded = loading;
      loading.catch(() => {
        if (loaded === loading) loaded = undefined;
      });
    }
    return loaded;
  };
}
