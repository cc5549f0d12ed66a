/**
 * The Container Storage Interface v1.12.0 (csi.proto beside this file, copied from the Go module
 * github.com/container-storage-interface/spec), loaded at run time with @grpc/proto-loader. Field names are kept
 * as the .proto spells them (`volume_id`, `ready_to_use`), so the messages below match the wire one to one. Only
 * the messages the stand-in driver (stand-in-driver.ts) reads or writes are typed here.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

export const CSI_SPEC_VERSION = 'v1.12.0';

export interface Timestamp {
  seconds: number;
  nanos: number;
}
export interface CapacityRange {
  required_bytes: number;
  limit_bytes: number;
}
export interface VolumeCapability {
  /** Which of `block` / `mount` is set (proto-loader's `oneofs: true`). */
  access_type?: 'block' | 'mount';
  block?: Record<string, never> | null;
  mount?: { fs_type: string; mount_flags: string[]; volume_mount_group: string } | null;
  access_mode?: { mode: string } | null;
}
export interface VolumeContentSource {
  type?: 'snapshot' | 'volume';
  snapshot?: { snapshot_id: string } | null;
  volume?: { volume_id: string } | null;
}
export interface Volume {
  capacity_bytes: number;
  volume_id: string;
  volume_context: Record<string, string>;
  content_source: VolumeContentSource | null;
}
export interface CreateVolumeRequest {
  name: string;
  capacity_range: CapacityRange | null;
  volume_capabilities: VolumeCapability[];
  parameters: Record<string, string>;
  volume_content_source: VolumeContentSource | null;
}
export interface Snapshot {
  size_bytes: number;
  snapshot_id: string;
  source_volume_id: string;
  creation_time: Timestamp;
  ready_to_use: boolean;
  group_snapshot_id: string;
}
export interface CreateSnapshotRequest {
  source_volume_id: string;
  name: string;
  parameters: Record<string, string>;
}
export interface ListSnapshotsRequest {
  max_entries: number;
  starting_token: string;
  source_volume_id: string;
  snapshot_id: string;
}
export interface ValidateVolumeCapabilitiesRequest {
  volume_id: string;
  volume_context: Record<string, string>;
  volume_capabilities: VolumeCapability[];
  parameters: Record<string, string>;
}
export interface NodePublishVolumeRequest {
  volume_id: string;
  target_path: string;
  volume_capability: VolumeCapability | null;
  readonly: boolean;
}
export interface NodeUnpublishVolumeRequest {
  volume_id: string;
  target_path: string;
}

type ClientCtor = new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => grpc.Client;
interface ServiceCtor extends ClientCtor {
  service: grpc.ServiceDefinition;
}

const definition = protoLoader.loadSync(fileURLToPath(new URL('./csi.proto', import.meta.url)), {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
});
const pkg = (grpc.loadPackageDefinition(definition) as unknown as { csi: { v1: { Identity: ServiceCtor; Controller: ServiceCtor; Node: ServiceCtor } } }).csi
  .v1;

/** Service definitions (for grpc.Server.addService) and client constructors. */
export const IdentityService = pkg.Identity;
export const ControllerService = pkg.Controller;
export const NodeService = pkg.Node;
