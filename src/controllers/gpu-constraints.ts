/** The scheduler's GPU-model annotation value for a workload's allowed models, each with the names nodes may give it. */
export function gpuModelsValue(models: readonly string[], aliases: ((model: string) => readonly string[]) | undefined): string | undefined {
  if (models.length === 0) return undefined;
  const all: string[] = [];
  for (const m of models) for (const name of [m, ...(aliases?.(m) ?? [])]) if (!all.includes(name)) all.push(name);
  return all.join(',');
}
