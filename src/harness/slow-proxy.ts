/**
 * A TCP proxy on loopback in front of kube-apiserver (TLS passes through untouched) that can add latency: with
 * `delayMs` > 0 every chunk, either way, is held that long before it is passed on (order kept: equal timers fire in
 * order); `responseDelayMs` holds the answers only. The scheduler replicas of `sits bench chaos` talk to the apiserver through it: a slow apiserver, as a
 * loaded or far-away one looks to them.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface SlowProxy {
  /** https://127.0.0.1:<port> */
  readonly url: string;
  /** Latency added to each chunk each way (0: pass through at once). */
  delayMs: number;
  /**
   * More latency on the answers only (server → client): a request is stored at once but its answer comes late,
   * as for a client paused or starved right after it sent the request.
   */
  responseDelayMs: number;
  close(): Promise<void>;
}

function forward(from: Socket, to: Socket, delay: () => number): void {
  from.on('data', (chunk: Buffer) => {
    const d = delay();
    if (d <= 0) to.write(chunk);
    else setTimeout(() => to.destroyed || to.write(chunk), d);
  });
  from.on('end', () => {
    const d = delay();
    if (d <= 0) to.end();
    else setTimeout(() => to.end(), d);
  });
  from.on('error', () => to.destroy());
  from.on('close', () => setTimeout(() => to.destroy(), delay() + 10));
}

/** Starts the proxy to `target` (host:port of the apiserver) on a free loopback port. */
export async function startSlowProxy(targetPort: number): Promise<SlowProxy> {
  const sockets = new Set<Socket>();
  const state = { delayMs: 0, responseDelayMs: 0 };
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    for (const s of [client, upstream]) s.on('close', () => sockets.delete(s));
    forward(client, upstream, () => state.delayMs);
    forward(upstream, client, () => state.delayMs + state.responseDelayMs);
  });
  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(0, '127.0.0.1', () => res());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(v: number) {
      state.delayMs = v;
    },
    get responseDelayMs() {
      return state.responseDelayMs;
    },
    set responseDelayMs(v: number) {
      state.responseDelayMs = v;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
