/**
 * The kubelet side of the device-plugin protocol, for tests (there is no kubelet here): a Registration
 * server on `<dir>/kubelet.sock` that, like the kubelet's device manager, checks the version, dials the
 * plugin's endpoint, and keeps a ListAndWatch stream open; then GetPreferredAllocation, Allocate and
 * GetDevicePluginOptions as the kubelet calls them. `restart()` does what a kubelet start does to the folder:
 * removes every socket in it, then serves a new kubelet.sock.
 */
import { readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import {
  API_VERSION,
  DevicePluginService,
  KUBELET_SOCKET,
  RegistrationService,
  unary,
  unixAddress,
  type AllocateResponse,
  type Device,
  type DevicePluginOptions,
  type Empty,
  type ListAndWatchResponse,
  type PreferredAllocationResponse,
  type RegisterRequest,
} from '../deviceplugin/proto.ts';

export class KubeletStandIn {
  /** Every Register request received, in order (across restarts). */
  readonly registrations: RegisterRequest[] = [];
  /** Every ListAndWatch response received, in order (across restarts). */
  readonly updates: Device[][] = [];
  private server: grpc.Server | undefined;
  private plugin: grpc.Client | undefined;
  private stream: grpc.ClientReadableStream<ListAndWatchResponse> | undefined;

  constructor(readonly dir: string) {}

  get socket(): string {
    return join(this.dir, KUBELET_SOCKET);
  }

  /** The devices of the last ListAndWatch response. */
  get devices(): Device[] {
    return this.updates.at(-1) ?? [];
  }

  async start(): Promise<void> {
    for (const f of await readdir(this.dir)) if (f.endsWith('.sock')) await unlink(join(this.dir, f)).catch(() => undefined);
    const server = new grpc.Server();
    server.addService(RegistrationService.service, {
      Register: (call: grpc.ServerUnaryCall<RegisterRequest, Empty>, cb: grpc.sendUnaryData<Empty>) => {
        const req = call.request;
        if (req.version !== API_VERSION) return cb(Object.assign(new Error(`unsupported version ${req.version}`), { code: grpc.status.INVALID_ARGUMENT }));
        this.registrations.push(req);
        cb(null, {});
        // The kubelet answers first, then connects to the endpoint in the background.
        setImmediate(() => this.connect(req.endpoint));
      },
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(unixAddress(this.socket), grpc.ServerCredentials.createInsecure(), (e) => (e === null ? resolve() : reject(e))),
    );
    this.server = server;
  }

  private connect(endpoint: string): void {
    this.stream?.cancel();
    this.plugin?.close();
    const client = new DevicePluginService(unixAddress(join(this.dir, endpoint)), grpc.credentials.createInsecure());
    this.plugin = client;
    const stream = (client as unknown as { ListAndWatch(req: Empty): grpc.ClientReadableStream<ListAndWatchResponse> }).ListAndWatch({});
    stream.on('data', (r: ListAndWatchResponse) => this.updates.push(r.devices));
    // A cancelled or broken stream ends here; a new registration opens a new one.
    stream.on('error', () => undefined);
    this.stream = stream;
  }

  private get client(): grpc.Client {
    if (this.plugin === undefined) throw new Error('no plugin has registered');
    return this.plugin;
  }

  options(): Promise<DevicePluginOptions> {
    return unary<Empty, DevicePluginOptions>(this.client, 'GetDevicePluginOptions', {});
  }

  preferred(available: readonly string[], size: number, mustInclude: readonly string[] = []): Promise<PreferredAllocationResponse> {
    return unary(this.client, 'GetPreferredAllocation', {
      container_requests: [{ available_deviceIDs: [...available], must_include_deviceIDs: [...mustInclude], allocation_size: size }],
    });
  }

  allocate(...containers: (readonly string[])[]): Promise<AllocateResponse> {
    return unary(this.client, 'Allocate', { container_requests: containers.map((ids) => ({ devices_ids: [...ids] })) });
  }

  async stop(): Promise<void> {
    this.stream?.cancel();
    this.stream = undefined;
    this.plugin?.close();
    this.plugin = undefined;
    this.server?.forceShutdown();
    this.server = undefined;
    await unlink(this.socket).catch(() => undefined);
  }

  /** A kubelet restart: stop, clear the folder's sockets, serve again. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }
}
