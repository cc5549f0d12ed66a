/**
 * Published unallocated GPU % at 100 % arrived workload, median of 10 seeds (FGD paper's expected-results
 * data, as ../shared/docs/benchmarks.md §1 lists it), by pod list file. Used only to print them beside
 * our numbers.
 */
export const PUBLISHED_UNALLOCATED_100: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  'openb_pod_list_default.csv': { random: 13.75, dotprod: 9.45, gpuclustering: 8.42, gpupacking: 8.2, bestfit: 7.09, fgd: 4.77 },
  'openb_pod_list_cpu050.csv': { random: 11.02, dotprod: 6.94, gpuclustering: 6.52, gpupacking: 6.47, bestfit: 6.42, fgd: 5.0 },
  'openb_pod_list_cpu100.csv': { random: 12.56, dotprod: 8.22, gpuclustering: 7.46, gpupacking: 7.45, bestfit: 6.72, fgd: 4.79 },
  'openb_pod_list_gpushare60.csv': { random: 17.22, dotprod: 13.17, gpuclustering: 13.03, gpupacking: 12.75, bestfit: 10.91, fgd: 8.7 },
  'openb_pod_list_gpuspec10.csv': { random: 13.69, dotprod: 9.75, gpuclustering: 8.05, gpupacking: 7.77, bestfit: 6.88, fgd: 5.3 },
  'openb_pod_list_gpuspec20.csv': { random: 13.91, dotprod: 11.68, gpuclustering: 10.87, gpupacking: 10.65, bestfit: 11.54, fgd: 5.31 },
  'openb_pod_list_multigpu20.csv': { random: 13.16, dotprod: 8.19, gpuclustering: 6.62, gpupacking: 6.49, bestfit: 6.27, fgd: 4.47 },
  'openb_pod_list_multigpu30.csv': { random: 13.43, dotprod: 6.98, gpuclustering: 5.45, gpupacking: 5.23, bestfit: 5.47, fgd: 3.61 },
};

/** Profile aliases of the benchmark's command line → the paper's policy names. */
export function publishedName(policy: string): string {
  const m: Record<string, string> = { 'gpu-clustering': 'gpuclustering', 'gpu-packing': 'gpupacking', 'best-fit': 'bestfit' };
  return m[policy] ?? policy;
}
