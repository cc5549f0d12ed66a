/**
 * A pass now, then one `intervalMs` after each pass ends: never two passes at once, however long one takes (the
 * live loops' shape: serving loop, GPU lender). `stop` cancels the next pass and waits for the one in flight.
 */
export function runPeriodically(tick: () => Promise<void>, intervalMs: number): { stop(): Promise<void> } {
  let stopped = false;
  let running: Promise<void> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const loop = (): void => {
    if (stopped) return;
    running = tick().finally(() => {
      running = undefined;
      if (!stopped) timer = setTimeout(loop, intervalMs);
    });
  };
  timer = setTimeout(loop, 0);
  return {
    stop: async () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
  };
}
