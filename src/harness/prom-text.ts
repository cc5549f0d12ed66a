// The parser moved to core/prom-text.ts so that the pure serving layer (engine metrics) can use it too;
// the harness keeps its old import path for the tests and benchmarks that read /metrics.
export * from '../core/prom-text.ts';
