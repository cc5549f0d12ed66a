import type { Command } from 'commander';
import { CliError } from '../errors.ts';
import { intOption, numberOption } from '../options.ts';
import { renderTop, type TopSection } from '../top-render.ts';
import { fetchLiveView, simView } from '../top-source.ts';

const SECTIONS: readonly TopSection[] = ['all', 'nodes', 'queues', 'pending', 'jobs'];
const OUTPUTS = ['table', 'wide', 'json'] as const;

interface TopFlags {
  server: string;
  kubeconfig?: string;
  token?: string;
  certificateAuthority?: string;
  insecureSkipTlsVerify?: boolean;
  sim?: boolean;
  seed: number;
  hours: number;
  load: number;
  at: number;
  output: string;
  maxRows: number;
  color?: boolean;
}

/** chalk's colour level for this terminal: none unless stdout is a TTY (or FORCE_COLOR), none with NO_COLOR or --no-color. */
function colorLevel(flag: boolean | undefined): 0 | 1 | 2 | 3 {
  if (flag === false || (process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== '')) return 0;
  const force = process.env.FORCE_COLOR;
  if (force !== undefined && force !== '') return force === '0' || force === 'false' ? 0 : (Math.min(3, Math.max(1, Number(force) || 1)) as 1 | 2 | 3);
  if (!process.stdout.isTTY) return 0;
  const depth = process.stdout.getColorDepth();
  return depth >= 24 ? 3 : depth >= 8 ? 2 : depth >= 4 ? 1 : 0;
}

export function registerTop(program: Command): void {
  program
    .command('top')
    .argument('[what]', `${SECTIONS.filter((s) => s !== 'all').join(' | ')} (default: heatmap, queues and pending jobs)`)
    .description('the GPU heatmap, queues and pending jobs of a running SITS scheduler (its /dashboard/api/v1/cluster, the dashboard\'s view) in the terminal, as kubectl top does')
    .option('--server <url>', 'the scheduler\'s HTTP port (sits run --metrics-host/--metrics-port)', 'https://127.0.0.1:8080')
    .option('--kubeconfig <file>', 'credentials to send (the current context\'s user: token or client certificate), as kubectl uses them (default: $KUBECONFIG or ~/.kube/config)')
    .option('--token <token>', 'bearer token instead of the kubeconfig user')
    .option('--certificate-authority <file>', 'CA bundle of the scheduler\'s serving certificate (default: the kubeconfig cluster\'s CA)')
    .option('--insecure-skip-tls-verify', 'do not check the scheduler\'s certificate (its self-signed default)')
    .option('--sim', 'show the demo workload replayed under SITS in virtual time instead (no cluster needed)')
    .option('--seed <n>', 'with --sim: workload seed', intOption('--seed'), 1)
    .option('--hours <h>', 'with --sim: hours of arrivals', numberOption('--hours', 0.1, 1000), 8)
    .option('--load <x>', 'with --sim: arrival-rate multiplier', numberOption('--load', 0.01, 100), 1)
    .option('--at <minutes>', 'with --sim: virtual minutes into the replay', numberOption('--at', 0, 1_000_000), 120)
    .option('-o, --output <format>', OUTPUTS.join(' | ') + ' (wide: one heatmap line per node)', 'table')
    .option('--max-rows <n>', 'pending and running rows shown at most', intOption('--max-rows', 1, 1_000_000), 20)
    .option('--no-color', 'no colours (also NO_COLOR=1; off when stdout is not a terminal)')
    .action(async (what: string | undefined, o: TopFlags) => {
      const section = (what ?? 'all') as TopSection;
      if (!SECTIONS.includes(section)) throw new CliError(`sits top: unknown view "${what}" (one of ${SECTIONS.filter((s) => s !== 'all').join(', ')})`);
      if (!(OUTPUTS as readonly string[]).includes(o.output)) throw new CliError(`--output must be ${OUTPUTS.join(', ')}, got "${o.output}"`);
      const view = o.sim === true
        ? simView({ seed: o.seed, hours: o.hours, load: o.load, atMinutes: o.at })
        : await fetchLiveView({
            server: o.server,
            ...(o.kubeconfig === undefined ? {} : { kubeconfig: o.kubeconfig }),
            ...(o.token === undefined ? {} : { token: o.token }),
            ...(o.certificateAuthority === undefined ? {} : { certificateAuthority: o.certificateAuthority }),
            ...(o.insecureSkipTlsVerify === true ? { insecureSkipTlsVerify: true } : {}),
          });
      // `sits top -o json | head`: a reader that stops early is not an error.
      process.stdout.on('error', (e: NodeJS.ErrnoException) => {
        if (e.code === 'EPIPE') process.exit(0);
        throw e;
      });
      if (o.output === 'json') {
        process.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
        return;
      }
      // The view's own time for a simulated cluster (virtual ms); the wall clock for a live one.
      const nowMs = view.source === 'sim' ? view.atMs : Date.now();
      process.stdout.write(renderTop(view, { colorLevel: colorLevel(o.color), width: process.stdout.columns ?? 120, section, wide: o.output === 'wide', nowMs, maxRows: o.maxRows }));
    });
}
