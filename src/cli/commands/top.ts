import type { Command } from 'commander';
import { CliError } from '../errors.ts';
import { intOption, numberOption } from '../options.ts';
import type { ClusterView } from '../../server/cluster-view.ts';
import { reportError } from '../errors.ts';
import { outputOption, printed } from '../kube-flags.ts';
import { renderTop, type TopSection } from '../top-render.ts';
import { fetchLiveView, simSource } from '../top-source.ts';

const SECTIONS: readonly TopSection[] = ['all', 'nodes', 'queues', 'pending', 'jobs'];
const OUTPUTS = ['table', 'wide', 'json', 'yaml'] as const;

interface TopFlags {
  server: string;
  kubeconfig?: string;
  context?: string;
  namespace?: string;
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
  watch?: boolean;
  interval: number;
}

/** The view with only `namespace`'s pending and running jobs (the nodes and queues stay cluster-wide). */
export function inNamespace(view: ClusterView, namespace: string | undefined): ClusterView {
  if (namespace === undefined) return view;
  const mine = (id: string): boolean => id.replace(/^gang:/, '').startsWith(`${namespace}/`);
  return { ...view, pending: view.pending.filter((p) => mine(p.id)), running: view.running.filter((r) => mine(r.id)) };
}

/** Resolves after `ms`, or at once when `stop` is called. */
function sleep(ms: number, onStop: (wake: () => void) => void): Promise<void> {
  return new Promise((res) => {
    const t = setTimeout(res, ms);
    onStop(() => {
      clearTimeout(t);
      res();
    });
  });
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
    .description(
      "the GPU heatmap, queues and pending jobs of a running SITS scheduler (its /dashboard/api/v1/cluster, the dashboard's view) in the terminal, as kubectl top does",
    )
    .option('--server <url>', "the scheduler's HTTP port (sits run --metrics-host/--metrics-port)", 'https://127.0.0.1:8080')
    .option(
      '--kubeconfig <file>',
      "credentials to send (the current context's user: token or client certificate), as kubectl uses them (default: $KUBECONFIG or ~/.kube/config)",
    )
    .option('--context <name>', "kubeconfig context whose user's credentials to send instead of the current one")
    .option('-n, --namespace <ns>', "only this namespace's pending and running jobs (the heatmap and queues stay cluster-wide; default: all namespaces)")
    .option('--token <token>', 'bearer token instead of the kubeconfig user')
    .option('--certificate-authority <file>', "CA bundle of the scheduler's serving certificate (default: the kubeconfig cluster's CA)")
    .option('--insecure-skip-tls-verify', "do not check the scheduler's certificate (its self-signed default)")
    .option('--sim', 'show the demo workload replayed under SITS in virtual time instead (no cluster needed)')
    .option('--seed <n>', 'with --sim: workload seed', intOption('--seed'), 1)
    .option('--hours <h>', 'with --sim: hours of arrivals', numberOption('--hours', 0.1, 1000), 8)
    .option('--load <x>', 'with --sim: arrival-rate multiplier', numberOption('--load', 0.01, 100), 1)
    .option('--at <minutes>', 'with --sim: virtual minutes into the replay', numberOption('--at', 0, 1_000_000), 120)
    .addOption(outputOption(OUTPUTS, "wide: one heatmap line per node; json/yaml: the dashboard's ClusterView"))
    .option('--max-rows <n>', 'pending and running rows shown at most', intOption('--max-rows', 1, 1_000_000), 20)
    .option(
      '-w, --watch',
      'redraw every --interval seconds until Ctrl-C (a terminal is cleared; a pipe gets a separator line); with --sim the replay plays on in real time',
    )
    .option('--interval <s>', 'with --watch: seconds between redraws', numberOption('--interval', 0.1, 3600), 2)
    .option('--no-color', 'no colours (also NO_COLOR=1; off when stdout is not a terminal)')
    .action(async (what: string | undefined, o: TopFlags) => {
      const section = (what ?? 'all') as TopSection;
      if (!SECTIONS.includes(section)) throw new CliError(`sits top: unknown view "${what}" (one of ${SECTIONS.filter((s) => s !== 'all').join(', ')})`);
      const sim = o.sim === true ? simSource({ seed: o.seed, hours: o.hours, load: o.load, atMinutes: o.at }) : undefined;
      const started = Date.now();
      const fetchView = async (): Promise<ClusterView> =>
        inNamespace(
          sim !== undefined
            ? sim(o.watch === true ? Date.now() - started : 0)
            : await fetchLiveView({
                server: o.server,
                ...(o.kubeconfig === undefined ? {} : { kubeconfig: o.kubeconfig }),
                ...(o.context === undefined ? {} : { context: o.context }),
                ...(o.token === undefined ? {} : { token: o.token }),
                ...(o.certificateAuthority === undefined ? {} : { certificateAuthority: o.certificateAuthority }),
                ...(o.insecureSkipTlsVerify === true ? { insecureSkipTlsVerify: true } : {}),
              }),
          o.namespace,
        );
      const draw = (view: ClusterView): string => {
        const obj = printed(view, o.output);
        if (obj !== undefined) return obj;
        // The view's own time for a simulated cluster (virtual ms); the wall clock for a live one.
        const nowMs = view.source === 'sim' ? view.atMs : Date.now();
        return renderTop(view, {
          colorLevel: colorLevel(o.color),
          width: process.stdout.columns ?? 120,
          section,
          wide: o.output === 'wide',
          nowMs,
          maxRows: o.maxRows,
        });
      };
      // The first view's errors end the command (a wrong flag, no scheduler): nothing to watch.
      let view = await fetchView();
      if (o.watch !== true) {
        process.stdout.write(draw(view));
        return;
      }
      // kubectl get -w ends on Ctrl-C with success: the watch was the point, not an error.
      let stopped = false;
      let wake = (): void => undefined;
      const stop = (): void => {
        stopped = true;
        wake();
      };
      // Not once: run under an older Node, a terminal's Ctrl-C arrives twice (ADR 0171's wrapper passes on what it
      // gets), and a second one with no listener would kill the process.
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      const tty = process.stdout.isTTY;
      for (let n = 0; !stopped; n++) {
        // A terminal is redrawn in place (cursor home, clear); a pipe gets each frame after a separator line.
        if (tty) process.stdout.write(`\x1b[H\x1b[2J${draw(view)}`);
        // JSON frames follow each other bare, as kubectl get -w -o json prints them (a JSON stream reader takes them).
        else if (o.output === 'json') process.stdout.write(draw(view));
        else if (o.output === 'yaml') process.stdout.write(`${n === 0 ? '' : '---\n'}${draw(view)}`);
        else process.stdout.write(`${n === 0 ? '' : '\n'}--- ${new Date().toISOString()} ---\n${draw(view)}`);
        await sleep(o.interval * 1000, (w) => (wake = w));
        if (stopped) break;
        try {
          view = await fetchView();
        } catch (e) {
          // A blip while watching (the scheduler restarting) is said and retried, not fatal.
          process.stderr.write(`${reportError(e, 'top').lines.join('\n')} (retrying every ${o.interval}s)\n`);
        }
      }
      // A second delivery of that Ctrl-C may still be on its way: taken as the first until then (an unref'd timer
      // keeps nothing alive).
      setTimeout(() => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }, 1_000).unref();
    });
}
