/**
 * The kubelet device-plugin API v1beta1 (api.proto beside this file, copied from k8s.io/kubelet), loaded at
 * run time with @grpc/proto-loader. Field names are kept as the .proto spells them (`devices_ids`,
 * `available_deviceIDs`), so the messages below match the wire one to one.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

export const API_VERSION = 'v1beta1';
export const HEALTHY = 'Healthy';
export const UNHEALTHY = 'Unhealthy';
/** The kubelet's registration socket inside the plugin folder. */
export const KUBELET_SOCKET = 'kubelet.sock';
export const DEFAULT_PLUGIN_DIR = '/var/lib/kubelet/device-plugins';

export type Empty = Record<string, never>;
export interface DevicePluginOptions {
  pre_start_required: boolean;
  get_preferred_allocation_available: boolean;
}
export interface RegisterRequest {
  version: string;
  endpoint: string;
  resource_name: string;
  options?: DevicePluginOptions | null;
}
export interface Device {
  ID: string;
  health: string;
  topology?: { nodes: { ID: number }[] } | null;
}
export interface ListAndWatchResponse {
  devices: Device[];
}
export interface ContainerPreferredAllocationRequest {
  available_deviceIDs: string[];
  must_include_deviceIDs: string[];
  allocation_size: number;
}
export interface PreferredAllocationRequest {
  container_requests: ContainerPreferredAllocationRequest[];
}
export interface PreferredAllocationResponse {
  container_responses: { deviceIDs: string[] }[];
}
export interface AllocateRequest {
  container_requests: { devices_ids: string[] }[];
}
export interface DeviceSpec {
  container_path: string;
  host_path: string;
  permissions: string;
}
export interface ContainerAllocateResponse {
  envs: Record<string, string>;
  mounts: { container_path: string; host_path: string; read_only: boolean }[];
  devices: DeviceSpec[];
  annotations: Record<string, string>;
  cdi_devices: { name: string }[];
}
export interface AllocateResponse {
  container_responses: ContainerAllocateResponse[];
}
export interface PreStartContainerRequest {
  devices_ids: string[];
}

type ClientCtor = new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => grpc.Client;
interface ServiceCtor extends ClientCtor {
  service: grpc.ServiceDefinition;
}

const definition = protoLoader.loadSync(fileURLToPath(new URL('./api.proto', import.meta.url)), {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
});
const pkg = (grpc.loadPackageDefinition(definition) as unknown as { v1beta1: { Registration: ServiceCtor; DevicePlugin: ServiceCtor } }).v1beta1;

/** Service definitions (for grpc.Server.addService) and client constructors. */
export const RegistrationService = pkg.Registration;
export const DevicePluginService = pkg.DevicePlugin;

/** `unix:///abs/path` for a socket path. */
export const unixAddress = (path: string): string => `unix://${path}`;

/** Promise form of a unary call on a loaded client. */
export function unary<Req, Res>(client: grpc.Client, method: string, req: Req, deadlineMs = 10_000): Promise<Res> {
  return new Promise((resolve, reject) => {
    const fn = (
      client as unknown as Record<string, (r: Req, m: grpc.Metadata, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, v: Res) => void) => void>
    )[method];
    if (fn === undefined) return reject(new Error(`no method ${method}`));
    fn.call(client, req, new grpc.Metadata(), { deadline: Date.now() + deadlineMs }, (e, v) => (e === null ? resolve(v) : reject(e)));
  });
}
