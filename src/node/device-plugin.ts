/**
 * The SITS device plugin for `nvidia.com/gpu` (kubelet device-plugin API v1beta1): one device per GPU of the
 * node agent's reading, unhealthy ones reported Unhealthy through ListAndWatch (as are GPUs quarantined on the Node,
 * `setQuarantined`: the kubelet then stops allocating them and lowers allocatable); Allocate gives the container
 * exactly the GPUs SITS recorded on the pod (allocation.ts, docs/adr/0047-device-plugin-finds-the-pod.md).
 *
 * It serves on `<plugin dir>/<socket>` and registers with `<plugin dir>/kubelet.sock`. A kubelet that
 * restarts removes every socket in the folder and creates a new kubelet.sock; the plugin notices either
 * (checked every `watchIntervalMs`), serves again and registers again.
 */
import { mkdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, GPU_RESOURCE } from '../api/wire.ts';
import type { KubeClient } from '../kube/client/client.ts';
import { choosePod, containerDevices, gpuPod } from './allocation.ts';
import {
  API_VERSION,
  DevicePluginService,
  HEALTHY,
  KUBELET_SOCKET,
  RegistrationService,
  UNHEALTHY,
  unary,
  unixAddress,
  type AllocateRequest,
  type AllocateResponse,
  type ContainerAllocateResponse,
  type Device,
  type DevicePluginOptions,
  type Empty,
  type ListAndWatchResponse,
  type PreferredAllocationRequest,
  type PreferredAllocationResponse,
  type RegisterRequest,
} from './deviceplugin/proto.ts';
import type { GpuReading, NodeReading } from './reading.ts';

export interface SitsDevicePluginOptions {
  readonly pluginDir: string;
  readonly nodeName: string;
  readonly client: KubeClient;
  readonly log: (line: string) => void;
  /** Default `sits-gpu.sock`. */
  readonly socketName?: string;
  readonly resourceName?: string;
  /** How often kubelet.sock and the plugin's own socket are checked. Default 1 s. */
  readonly watchIntervalMs?: number;
  /** Host folder of the device files. Default /dev. */
  readonly devRoot?: string;
}

const OPTIONS: DevicePluginOptions = { pre_start_required: false, get_preferred_allocation_available: true };

/** The device ID the kubelet sees: the GPU's UUID (stable across reboots), or its index when the driver gives none. */
export const deviceId = (g: GpuReading): string => (g.uuid !== '' && g.uuid !== 'N/A' ? g.uuid : `gpu-${g.index}`);

const grpcError = (code: grpc.status, message: string): grpc.ServiceError =>
  Object.assign(new Error(message), { code, details: message, metadata: new grpc.Metadata() });

export class SitsDevicePlugin {
  private server: grpc.Server | undefined;
  private gpus: readonly GpuReading[] = [];
  private devices: Device[] = [];
  /** GPU index → why it is quarantined (the Node's gpu-quarantine annotation, ADR 0096). */
  private quarantined: ReadonlyMap<number, string> = new Map();
  private readonly streams = new Set<grpc.ServerWritableStream<Empty, ListAndWatchResponse>>();
  /** Indices handed out per pod UID, before the annotation written for them is seen in a list. */
  private readonly handed = new Map<string, number[]>();
  private queue: Promise<unknown> = Promise.resolve();
  private kubeletKey = '';
  private registered = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private checking: Promise<void> | undefined;
  private stopped = false;
  readonly socketPath: string;
  readonly stats = { registrations: 0, allocations: 0, fromKubeletChoice: 0 };

  constructor(private readonly opts: SitsDevicePluginOptions) {
    this.socketPath = join(opts.pluginDir, opts.socketName ?? 'sits-gpu.sock');
  }

  /** A new reading from the node agent: the device list, pushed to every ListAndWatch stream when it changed. */
  update(reading: NodeReading): void {
    this.gpus = reading.gpus;
    this.publish();
  }

  /**
   * The GPUs quarantined on this Node (index → reason). A quarantined GPU is sent Unhealthy until it is released,
   * so the kubelet gives it to no pod, whichever scheduler placed the pod.
   */
  setQuarantined(quarantined: ReadonlyMap<number, string>): void {
    const key = (m: ReadonlyMap<number, string>): string => JSON.stringify([...m].sort((a, b) => a[0] - b[0]));
    if (key(quarantined) === key(this.quarantined)) return;
    this.quarantined = new Map(quarantined);
    this.publish();
  }

  private publish(): void {
    const healthy = (g: GpuReading): boolean => g.healthy && !this.quarantined.has(g.index);
    const devices = this.gpus.map((g) => ({
      ID: deviceId(g),
      health: healthy(g) ? HEALTHY : UNHEALTHY,
      topology: g.numaNode >= 0 ? { nodes: [{ ID: g.numaNode }] } : null,
    }));
    if (JSON.stringify(devices) === JSON.stringify(this.devices)) return;
    const why = (g: GpuReading): string =>
      [...g.reasons, ...(this.quarantined.has(g.index) ? [`quarantined: ${this.quarantined.get(g.index) ?? ''}`] : [])].join('; ');
    const sick = this.gpus.filter((g) => !healthy(g)).map((g) => `${g.index} (${why(g)})`);
    if (this.devices.length > 0 || sick.length > 0)
      this.opts.log(`device plugin: ${devices.length} GPUs${sick.length === 0 ? ', all healthy' : `, unhealthy: ${sick.join(', ')}`}`);
    this.devices = devices;
    for (const s of this.streams) s.write({ devices });
  }

  async start(): Promise<void> {
    await mkdir(this.opts.pluginDir, { recursive: true });
    await this.serve();
    await this.check();
    const loop = (): void => {
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        this.checking = this.check().finally(() => {
          this.checking = undefined;
          loop();
        });
      }, this.opts.watchIntervalMs ?? 1000);
    };
    loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.checking;
    for (const s of this.streams) s.end();
    this.streams.clear();
    this.server?.forceShutdown();
    this.server = undefined;
    await unlink(this.socketPath).catch(() => undefined);
  }

  get isRegistered(): boolean {
    return this.registered;
  }

  private async serve(): Promise<void> {
    this.server?.forceShutdown();
    for (const s of this.streams) s.end();
    this.streams.clear();
    await unlink(this.socketPath).catch(() => undefined);
    const server = new grpc.Server();
    server.addService(DevicePluginService.service, {
      GetDevicePluginOptions: (_call: grpc.ServerUnaryCall<Empty, DevicePluginOptions>, cb: grpc.sendUnaryData<DevicePluginOptions>) => cb(null, OPTIONS),
      ListAndWatch: (call: grpc.ServerWritableStream<Empty, ListAndWatchResponse>) => {
        this.streams.add(call);
        call.write({ devices: this.devices });
        const drop = (): void => void this.streams.delete(call);
        call.on('cancelled', drop);
        call.on('close', drop);
        call.on('error', drop);
      },
      GetPreferredAllocation: (
        call: grpc.ServerUnaryCall<PreferredAllocationRequest, PreferredAllocationResponse>,
        cb: grpc.sendUnaryData<PreferredAllocationResponse>,
      ) =>
        void this.serial(() => this.preferred(call.request)).then(
          (r) => cb(null, r),
          (e: grpc.ServiceError) => cb(e),
        ),
      Allocate: (call: grpc.ServerUnaryCall<AllocateRequest, AllocateResponse>, cb: grpc.sendUnaryData<AllocateResponse>) =>
        void this.serial(() => this.allocate(call.request)).then(
          (r) => cb(null, r),
          (e: grpc.ServiceError) => cb(e),
        ),
      PreStartContainer: (_call: grpc.ServerUnaryCall<unknown, Empty>, cb: grpc.sendUnaryData<Empty>) => cb(null, {}),
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(unixAddress(this.socketPath), grpc.ServerCredentials.createInsecure(), (e) => (e === null ? resolve() : reject(e))),
    );
    this.server = server;
  }

  /** Serves again when the socket is gone and registers again when the kubelet is new (or registering failed). */
  private async check(): Promise<void> {
    const kubelet = join(this.opts.pluginDir, KUBELET_SOCKET);
    const st = await stat(kubelet).catch(() => undefined);
    if (st === undefined) {
      if (this.registered) this.opts.log(`device plugin: ${kubelet} is gone (kubelet stopped); waiting for it`);
      this.registered = false;
      this.kubeletKey = '';
      return;
    }
    const key = `${st.ino}:${st.ctimeMs}`;
    const own = await stat(this.socketPath).catch(() => undefined);
    if (own === undefined) {
      this.opts.log(`device plugin: ${this.socketPath} was removed (kubelet restart); serving again`);
      await this.serve();
      this.registered = false;
    }
    if (this.registered && key === this.kubeletKey) return;
    try {
      await this.register(kubelet);
      this.kubeletKey = key;
      this.registered = true;
      this.stats.registrations++;
      this.opts.log(`device plugin: registered ${this.opts.resourceName ?? GPU_RESOURCE} (${this.devices.length} GPUs) with the kubelet`);
    } catch (e) {
      this.registered = false;
      this.opts.log(`device plugin: registering with ${kubelet} failed: ${(e as Error).message}; retrying`);
    }
  }

  private async register(kubeletSocket: string): Promise<void> {
    const client = new RegistrationService(unixAddress(kubeletSocket), grpc.credentials.createInsecure());
    try {
      const req: RegisterRequest = {
        version: API_VERSION,
        endpoint: this.socketPath.slice(this.opts.pluginDir.length + 1),
        resource_name: this.opts.resourceName ?? GPU_RESOURCE,
        options: OPTIONS,
      };
      await unary<RegisterRequest, Empty>(client, 'Register', req, 5000);
    } finally {
      client.close();
    }
  }

  /** One Allocate or GetPreferredAllocation at a time, so two calls never pick the same pod. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async pods(): Promise<V1Pod[]> {
    try {
      const list = await this.opts.client.get<{ items: V1Pod[] }>('/api/v1/pods', { fieldSelector: `spec.nodeName=${this.opts.nodeName}` });
      const uids = new Set(list.items.map((p) => p.metadata?.uid));
      for (const uid of this.handed.keys()) if (!uids.has(uid)) this.handed.delete(uid);
      return list.items;
    } catch (e) {
      // Guessing would give a SITS pod GPUs SITS did not choose: fail the call, the kubelet reports it on the pod.
      throw grpcError(grpc.status.UNAVAILABLE, `cannot list the pods of node ${this.opts.nodeName} to find which GPUs SITS chose: ${(e as Error).message}`);
    }
  }

  private gpuPods(items: readonly V1Pod[]) {
    return items.map((p) => gpuPod(p, this.handed.get(p.metadata?.uid ?? '') ?? [])).filter((p) => p !== undefined);
  }

  private indexOf(id: string): number {
    const g = this.gpus.find((x) => deviceId(x) === id);
    if (g === undefined)
      throw grpcError(grpc.status.INVALID_ARGUMENT, `unknown device ${id} (this plugin advertises ${this.devices.map((d) => d.ID).join(', ')})`);
    return g.index;
  }

  private async preferred(req: PreferredAllocationRequest): Promise<PreferredAllocationResponse> {
    const pods = this.gpuPods(await this.pods());
    return {
      container_responses: req.container_requests.map((c) => {
        const available = new Set(c.available_deviceIDs);
        const pick = choosePod(pods, c.allocation_size);
        const ids = pick?.gpus.map((i) => deviceId(this.gpus.find((g) => g.index === i) as GpuReading));
        if (ids !== undefined && ids.every((id) => available.has(id)) && c.must_include_deviceIDs.every((id) => ids.includes(id))) return { deviceIDs: ids };
        // No SITS pod waits for this count: the required devices, then the available ones in index order.
        const rest = c.available_deviceIDs.filter((id) => !c.must_include_deviceIDs.includes(id)).sort((a, b) => this.indexOf(a) - this.indexOf(b));
        return { deviceIDs: [...c.must_include_deviceIDs, ...rest].slice(0, c.allocation_size) };
      }),
    };
  }

  private async allocate(req: AllocateRequest): Promise<AllocateResponse> {
    const items = await this.pods();
    const out: ContainerAllocateResponse[] = [];
    for (const c of req.container_requests) {
      const chosen = c.devices_ids.map((id) => this.indexOf(id));
      const pick = choosePod(this.gpuPods(items), chosen.length, chosen);
      let gpus = chosen;
      if (pick !== undefined) {
        gpus = pick.gpus;
        this.handed.set(pick.pod.uid, [...(this.handed.get(pick.pod.uid) ?? []), ...gpus]);
        const sick = gpus.filter((i) => this.gpus.find((g) => g.index === i)?.healthy === false);
        if (sick.length > 0) this.opts.log(`device plugin: ${pick.pod.key} gets unhealthy GPU(s) ${sick.join(',')} that SITS chose before they were reported`);
        await this.markAllocated(pick.pod.key, [...pick.pod.allocated, ...gpus]);
        this.opts.log(`device plugin: ${pick.pod.key} gets GPUs ${gpus.join(',')} as SITS recorded (kubelet offered ${chosen.join(',')})`);
      } else {
        this.stats.fromKubeletChoice++;
        this.opts.log(`device plugin: no SITS pod on ${this.opts.nodeName} waits for ${chosen.length} GPU(s); giving the kubelet's choice ${chosen.join(',')}`);
      }
      this.stats.allocations++;
      const minorOf = (i: number): number => this.gpus.find((g) => g.index === i)?.minorNumber ?? i;
      const { envs, devices } = containerDevices(gpus, minorOf, this.opts.devRoot);
      out.push({ envs, devices, mounts: [], annotations: {}, cdi_devices: [] });
    }
    return { container_responses: out };
  }

  private async markAllocated(key: string, allocated: readonly number[]): Promise<void> {
    const [ns, name] = key.split('/') as [string, string];
    try {
      await this.opts.client.mergePatch(`/api/v1/namespaces/${ns}/pods/${name}`, {
        metadata: { annotations: { [ANNOTATION.gpuAllocated]: [...allocated].sort((a, b) => a - b).join(',') } },
      });
    } catch (e) {
      // The in-memory record keeps this plugin from handing the GPUs out again; only a restart forgets it.
      this.opts.log(`device plugin: marking ${key} allocated failed: ${(e as Error).message}`);
    }
  }
}
