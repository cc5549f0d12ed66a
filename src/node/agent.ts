/**
 * `sits node-agent`'s topology loop: every interval it reads the node (source.ts), and when the labels or
 * annotations SITS reads differ from what the Node object carries, it writes them in one JSON merge patch on
 * its own Node. A failed reading writes nothing (the node keeps its last good description) and is logged; the
 * device plugin keeps its last good device list too.
 */
import type { V1Node } from '@kubernetes/client-node';
import type { Result } from '../core/result.ts';
import type { KubeClient } from '../kube/client/client.ts';
import { MANAGED_ANNOTATIONS, MANAGED_LABELS, type NodeReading } from './reading.ts';
import { readNode, type NodeSource } from './source.ts';

export interface NodePatch {
  readonly metadata: { readonly labels?: Record<string, string | null>; readonly annotations?: Record<string, string | null> };
}

/** The merge patch that brings the node's managed keys to the reading (null removes a key), or undefined when nothing differs. */
export function nodePatch(node: V1Node, reading: NodeReading): NodePatch | undefined {
  const diff = (
    have: Record<string, string> | undefined,
    want: Readonly<Record<string, string>>,
    keys: readonly string[],
  ): Record<string, string | null> | undefined => {
    const out: Record<string, string | null> = {};
    for (const k of keys) {
      const w = want[k];
      const h = have?.[k];
      if (w === undefined ? h !== undefined : h !== w) out[k] = w ?? null;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  };
  const labels = diff(node.metadata?.labels, reading.labels, MANAGED_LABELS);
  const annotations = diff(node.metadata?.annotations, reading.annotations, MANAGED_ANNOTATIONS);
  if (labels === undefined && annotations === undefined) return undefined;
  return { metadata: { ...(labels === undefined ? {} : { labels }), ...(annotations === undefined ? {} : { annotations }) } };
}

export type TickResult =
  | { readonly kind: 'patched'; readonly patch: NodePatch }
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'read-only' }
  | { readonly kind: 'error'; readonly error: string };

export interface NodeAgentOptions {
  readonly source: NodeSource;
  /** Where to write; undefined: read only (the device plugin alone, `--no-labels`). */
  readonly node?: { readonly client: KubeClient; readonly name: string };
  readonly intervalMs: number;
  readonly log: (line: string) => void;
}

export class NodeAgent {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  private running: Promise<TickResult> | undefined;
  private lastError = '';
  private readonly listeners: ((r: NodeReading) => void)[] = [];
  /** The last good reading. */
  last: NodeReading | undefined;

  constructor(private readonly opts: NodeAgentOptions) {}

  /** Called with every good reading (the device plugin's device list and health). */
  onReading(fn: (r: NodeReading) => void): void {
    this.listeners.push(fn);
  }

  /** One read-and-write round. Never throws: an API error is a result too. */
  async once(): Promise<TickResult> {
    const reading: Result<NodeReading, string> = await readNode(this.opts.source);
    if (!reading.ok) return this.fail(`reading the node: ${reading.error}; labels left as they are`);
    this.last = reading.value;
    for (const fn of this.listeners) fn(reading.value);
    const target = this.opts.node;
    if (target === undefined) return this.done({ kind: 'read-only' });
    const path = `/api/v1/nodes/${encodeURIComponent(target.name)}`;
    try {
      const node = await target.client.get<V1Node>(path);
      const patch = nodePatch(node, reading.value);
      if (patch === undefined) return this.done({ kind: 'unchanged' });
      await target.client.mergePatch(path, patch);
      this.opts.log(`node ${target.name}: wrote ${[...Object.keys(patch.metadata.labels ?? {}), ...Object.keys(patch.metadata.annotations ?? {})].join(', ')}`);
      return this.done({ kind: 'patched', patch });
    } catch (e) {
      return this.fail(`node ${target.name}: ${(e as Error).message}`);
    }
  }

  private done(r: TickResult): TickResult {
    if (this.lastError !== '') this.opts.log('node agent: reading and writing work again');
    this.lastError = '';
    return r;
  }

  /** Logs a problem once until it changes or clears (a broken driver would otherwise log every interval). */
  private fail(error: string): TickResult {
    if (error !== this.lastError) this.opts.log(`node agent: ${error}`);
    this.lastError = error;
    return { kind: 'error', error };
  }

  /** Reads every interval; `afterFirstInterval` when a round has just been run by hand (once()). */
  start(afterFirstInterval = false): void {
    const loop = async (): Promise<void> => {
      this.running = this.once();
      await this.running;
      this.running = undefined;
      if (!this.stopped) this.timer = setTimeout(() => void loop(), this.opts.intervalMs);
    };
    if (afterFirstInterval) this.timer = setTimeout(() => void loop(), this.opts.intervalMs);
    else void loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.running;
  }
}
