/**
 * A Service stand-in for e2e tests (ADR 0078): a TCP front on 127.0.0.1 that sends each new connection to a
 * backend whose `/readyz` answers 200, as kube-proxy sends connections to a Service's Ready endpoints only.
 * Readiness is polled like the endpoints controller's view of readiness probes. TLS passes through untouched.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { request } from 'node:https';

export interface ReadyFront {
  readonly port: number;
  /** Backend ports that answered Ready at the last poll. */
  ready(): readonly number[];
  close(): Promise<void>;
}

function readyz(port: number, ca: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', method: 'GET', ca, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

export async function startReadyFront(backends: readonly number[], ca: string, everyMs = 200): Promise<ReadyFront> {
  let ready: number[] = [];
  let stopped = false;
  const poll = async (): Promise<void> => {
    const r = await Promise.all(backends.map((b) => readyz(b, ca)));
    ready = backends.filter((_, i) => r[i] === true);
  };
  await poll();
  const timer = setInterval(() => void poll(), everyMs);
  const sockets = new Set<Socket>();
  let next = 0;
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    const to = ready.length === 0 ? undefined : ready[next++ % ready.length];
    // No Ready endpoint: the connection is refused, as a Service without endpoints refuses it.
    if (to === undefined || stopped) {
      client.destroy();
      return;
    }
    const upstream = connect(to, '127.0.0.1');
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  return {
    port,
    ready: () => ready,
    close: async () => {
      stopped = true;
      clearInterval(timer);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
