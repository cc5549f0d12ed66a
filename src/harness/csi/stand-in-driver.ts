/**
 * A stand-in for a real storage backend in tests: a CSI plugin speaking the real CSI v1.12 gRPC protocol on a unix
 * socket, so the real csi-snapshotter and snapshot-controller drive it exactly as they drive a cloud disk.
 *
 * - A volume is a folder `<stateDir>/volumes/<id>/`; a snapshot is a tarball of that folder
 *   (`tar czf <stateDir>/snapshots/<id>.tgz -C <volume> .`, what csi-driver-host-path does), ready when the
 *   call returns; a volume created from a snapshot content source is that tarball unpacked.
 * - Capacity (optional `capacityBytes`): the volumes' capacities plus the snapshots' tarball sizes. A volume or a
 *   snapshot that does not fit is refused with RESOURCE_EXHAUSTED naming what is used and free (the "full volume"
 *   of issue 14).
 * - Errors carry the gRPC codes the CSI spec names (INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS for a name reused
 *   with other arguments, OUT_OF_RANGE, ABORTED for a bad list token); repeated calls are idempotent.
 * - Node service: publish is a symlink at target_path to the volume folder (a real driver bind-mounts; that
 *   needs privileges tests do not have). Enough for csi-sanity, which always calls the node RPCs.
 * - State survives a restart of the driver on the same folder (state.json, written after each change).
 *
 * Validated by the real csi-sanity (stand-in-driver.e2e.test.ts).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  rmdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';

import { ControllerService, CSI_SPEC_VERSION, IdentityService, NodeService } from './proto.ts';
import type {
  CreateSnapshotRequest,
  CreateVolumeRequest,
  ListSnapshotsRequest,
  NodePublishVolumeRequest,
  NodeUnpublishVolumeRequest,
  Snapshot,
  ValidateVolumeCapabilitiesRequest,
  Volume,
  VolumeCapability,
} from './proto.ts';

const execFileP = promisify(execFile);

export const STAND_IN_DRIVER_NAME = 'stand-in.csi.sits.dev';
const VENDOR_VERSION = '0.1.0';
const GiB = 1024 * 1024 * 1024;
/** Size of a volume whose request names no capacity. */
export const DEFAULT_VOLUME_BYTES = GiB;
/** The CSI spec's limit on names and ids (csi-sanity checks 128). */
const MAX_NAME = 128;

export interface StandInCsiDriverOptions {
  /** Folder holding volumes/, snapshots/ and state.json; created when missing. */
  readonly stateDir: string;
  /** Unix socket to listen on. Default `<stateDir>/csi.sock`. */
  readonly socketPath?: string;
  /** CSI driver name (GetPluginInfo). Default STAND_IN_DRIVER_NAME. */
  readonly name?: string;
  /** Total bytes for volumes (their capacities) and snapshots (their tarballs). Default: unlimited. */
  readonly capacityBytes?: number;
  /** NodeGetInfo's node id. Default 'stand-in-node'. */
  readonly nodeId?: string;
  /** Receives one line per call that changes state or fails. */
  readonly log?: (line: string) => void;
}

export interface StandInVolume {
  readonly id: string;
  readonly name: string;
  readonly capacityBytes: number;
  readonly sourceSnapshotId?: string;
}

export interface StandInSnapshot {
  readonly id: string;
  readonly name: string;
  readonly sourceVolumeId: string;
  /** Epoch milliseconds. */
  readonly createdAtMs: number;
  /** The restore size (the source volume's capacity): what a volume restored from it needs. */
  readonly sizeBytes: number;
  /** Bytes of the tarball on disk. */
  readonly fileBytes: number;
}

export interface StandInCsiDriver {
  readonly name: string;
  readonly socketPath: string;
  /** `unix://<socketPath>`, what --csi-address and csi-sanity's --csi.endpoint take. */
  readonly address: string;
  readonly stateDir: string;
  /** The folder of a volume (present or not). */
  volumeDir(volumeId: string): string;
  /** The tarball of a snapshot (present or not). */
  snapshotFile(snapshotId: string): string;
  volumes(): StandInVolume[];
  snapshots(): StandInSnapshot[];
  /** How many calls of a CSI method (e.g. 'CreateSnapshot') the driver has answered, errors included. */
  calls(method: string): number;
  /** Creates a volume directly (what a static PV's backing disk is), as CreateVolume with `name` and `capacityBytes`. */
  createVolume(name: string, capacityBytes?: number): Promise<StandInVolume>;
  stop(): Promise<void>;
}

class CsiError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

interface State {
  volumes: StandInVolume[];
  snapshots: StandInSnapshot[];
}

/** Stable, folder-safe id for a CSI name (names may hold any characters, up to 128). */
function idFor(prefix: string, name: string): string {
  return `${prefix}-${createHash('sha256').update(name).digest('hex').slice(0, 20)}`;
}

function requireField(value: string, field: string): void {
  if (value === '') throw new CsiError(grpc.status.INVALID_ARGUMENT, `${field} is required`);
}

function checkName(name: string, field: string): void {
  requireField(name, field);
  if (name.length > MAX_NAME) throw new CsiError(grpc.status.INVALID_ARGUMENT, `${field} is ${name.length} characters long; the limit is ${MAX_NAME}`);
}

/** Why a capability cannot be served, or undefined when it can. Volumes are folders: mount only, any access mode. */
function unsupportedCapability(c: VolumeCapability, field: string): string | undefined {
  if (c.access_mode === null || c.access_mode === undefined || c.access_mode.mode === 'UNKNOWN') return `${field}.access_mode is required`;
  if (c.access_type === 'block') return `${field}: block access is not supported (volumes are folders; use mount)`;
  if (c.access_type !== 'mount') return `${field}.access_type (mount or block) is required`;
  return undefined;
}

function checkCapabilities(caps: readonly VolumeCapability[], field: string): void {
  if (caps.length === 0) throw new CsiError(grpc.status.INVALID_ARGUMENT, `${field} is required`);
  caps.forEach((c, i) => {
    const why = unsupportedCapability(c, `${field}[${i}]`);
    if (why !== undefined) throw new CsiError(grpc.status.INVALID_ARGUMENT, why);
  });
}

function timestamp(ms: number): { seconds: number; nanos: number } {
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 };
}

function volumeMessage(v: StandInVolume): Volume {
  return {
    volume_id: v.id,
    capacity_bytes: v.capacityBytes,
    volume_context: {},
    content_source: v.sourceSnapshotId !== undefined ? { type: 'snapshot', snapshot: { snapshot_id: v.sourceSnapshotId } } : null,
  };
}

function snapshotMessage(s: StandInSnapshot): Snapshot {
  return {
    snapshot_id: s.id,
    source_volume_id: s.sourceVolumeId,
    size_bytes: s.sizeBytes,
    creation_time: timestamp(s.createdAtMs),
    ready_to_use: true,
    group_snapshot_id: '',
  };
}

/**
 * The driver's volumes and snapshots: folders and tarballs under the state folder, their list in state.json (written
 * after every change), the optional capacity enforced; each method is one CSI call's work.
 */
class StandInStore {
  readonly state: State;
  private readonly statePath: string;
  private readonly volumesDir: string;
  private readonly snapshotsDir: string;

  constructor(
    stateDir: string,
    private readonly capacity: number | undefined,
    readonly log: (m: string) => void,
  ) {
    this.volumesDir = join(stateDir, 'volumes');
    this.snapshotsDir = join(stateDir, 'snapshots');
    this.statePath = join(stateDir, 'state.json');
    mkdirSync(this.volumesDir, { recursive: true });
    mkdirSync(this.snapshotsDir, { recursive: true });
    this.state = existsSync(this.statePath) ? (JSON.parse(readFileSync(this.statePath, 'utf8')) as State) : { volumes: [], snapshots: [] };
  }

  volumeDir(id: string): string {
    return join(this.volumesDir, id);
  }

  snapshotFile(id: string): string {
    return join(this.snapshotsDir, `${id}.tgz`);
  }

  private save(): void {
    writeFileSync(`${this.statePath}.tmp`, `${JSON.stringify(this.state, null, 2)}\n`);
    renameSync(`${this.statePath}.tmp`, this.statePath);
  }

  private used(): number {
    return this.state.volumes.reduce((s, v) => s + v.capacityBytes, 0) + this.state.snapshots.reduce((s, x) => s + x.fileBytes, 0);
  }

  private fits(bytes: number, what: string): void {
    if (this.capacity === undefined) return;
    const free = this.capacity - this.used();
    if (bytes > free)
      throw new CsiError(
        grpc.status.RESOURCE_EXHAUSTED,
        `storage full: ${what} needs ${bytes} bytes; ${this.used()} of ${this.capacity} bytes are used, ${free} free`,
      );
  }

  private findVolume(id: string): StandInVolume | undefined {
    return this.state.volumes.find((v) => v.id === id);
  }

  private findSnapshot(id: string): StandInSnapshot | undefined {
    return this.state.snapshots.find((s) => s.id === id);
  }

  async createVolume(req: CreateVolumeRequest): Promise<StandInVolume> {
    checkName(req.name, 'name');
    checkCapabilities(req.volume_capabilities, 'volume_capabilities');
    const required = req.capacity_range?.required_bytes ?? 0;
    const limit = req.capacity_range?.limit_bytes ?? 0;
    if (required < 0 || limit < 0) throw new CsiError(grpc.status.INVALID_ARGUMENT, 'capacity_range: bytes must not be negative');
    if (limit > 0 && required > limit)
      throw new CsiError(grpc.status.INVALID_ARGUMENT, `capacity_range: required_bytes ${required} exceeds limit_bytes ${limit}`);
    let sourceSnapshot: StandInSnapshot | undefined;
    const src = req.volume_content_source;
    if (src !== null && src.type !== undefined) {
      if (src.type !== 'snapshot') throw new CsiError(grpc.status.INVALID_ARGUMENT, 'volume_content_source: only a snapshot source is supported (no cloning)');
      const sid = src.snapshot?.snapshot_id ?? '';
      requireField(sid, 'volume_content_source.snapshot.snapshot_id');
      sourceSnapshot = this.findSnapshot(sid);
      if (sourceSnapshot === undefined) throw new CsiError(grpc.status.NOT_FOUND, `source snapshot ${sid} not found`);
    }
    const size = Math.max(required > 0 ? required : limit > 0 ? Math.min(limit, DEFAULT_VOLUME_BYTES) : DEFAULT_VOLUME_BYTES, sourceSnapshot?.sizeBytes ?? 0);
    if (limit > 0 && size > limit)
      throw new CsiError(grpc.status.OUT_OF_RANGE, `snapshot ${sourceSnapshot?.id} needs ${size} bytes, more than limit_bytes ${limit}`);

    const existing = this.state.volumes.find((v) => v.name === req.name);
    if (existing !== undefined) {
      if ((required > 0 && existing.capacityBytes < required) || (limit > 0 && existing.capacityBytes > limit)) {
        throw new CsiError(
          grpc.status.ALREADY_EXISTS,
          `volume ${req.name} exists with capacity ${existing.capacityBytes} bytes, outside the requested range [${required}, ${limit || '∞'}]`,
        );
      }
      if (existing.sourceSnapshotId !== sourceSnapshot?.id)
        throw new CsiError(grpc.status.ALREADY_EXISTS, `volume ${req.name} exists with another content source`);
      return existing;
    }
    this.fits(size, `volume ${req.name}`);
    const vol: StandInVolume = {
      id: idFor('vol', req.name),
      name: req.name,
      capacityBytes: size,
      ...(sourceSnapshot ? { sourceSnapshotId: sourceSnapshot.id } : {}),
    };
    const dir = this.volumeDir(vol.id);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    if (sourceSnapshot !== undefined) await execFileP('tar', ['xzf', this.snapshotFile(sourceSnapshot.id), '-C', dir]);
    this.state.volumes.push(vol);
    this.save();
    this.log(`CreateVolume ${req.name} → ${vol.id} (${size} bytes${sourceSnapshot ? `, from ${sourceSnapshot.id}` : ''})`);
    return vol;
  }

  deleteVolume(id: string): void {
    requireField(id, 'volume_id');
    const i = this.state.volumes.findIndex((v) => v.id === id);
    if (i < 0) return; // already gone: DeleteVolume is idempotent
    rmSync(this.volumeDir(id), { recursive: true, force: true });
    this.state.volumes.splice(i, 1);
    this.save();
    this.log(`DeleteVolume ${id}`);
  }

  async createSnapshot(req: CreateSnapshotRequest): Promise<StandInSnapshot> {
    requireField(req.source_volume_id, 'source_volume_id');
    checkName(req.name, 'name');
    const existing = this.state.snapshots.find((s) => s.name === req.name);
    if (existing !== undefined) {
      if (existing.sourceVolumeId !== req.source_volume_id)
        throw new CsiError(grpc.status.ALREADY_EXISTS, `snapshot ${req.name} exists for another volume (${existing.sourceVolumeId})`);
      return existing;
    }
    const vol = this.findVolume(req.source_volume_id);
    if (vol === undefined) throw new CsiError(grpc.status.NOT_FOUND, `source volume ${req.source_volume_id} not found`);
    const id = idFor('snap', req.name);
    const file = this.snapshotFile(id);
    const createdAtMs = Date.now();
    await execFileP('tar', ['czf', `${file}.tmp`, '-C', this.volumeDir(vol.id), '.']);
    const fileBytes = statSync(`${file}.tmp`).size;
    try {
      this.fits(fileBytes, `snapshot ${req.name} of volume ${vol.id}`);
    } catch (e) {
      rmSync(`${file}.tmp`, { force: true });
      throw e;
    }
    renameSync(`${file}.tmp`, file);
    const snap: StandInSnapshot = { id, name: req.name, sourceVolumeId: vol.id, createdAtMs, sizeBytes: vol.capacityBytes, fileBytes };
    this.state.snapshots.push(snap);
    this.save();
    this.log(`CreateSnapshot ${req.name} → ${id} (${fileBytes} bytes of tarball)`);
    return snap;
  }

  deleteSnapshot(id: string): void {
    requireField(id, 'snapshot_id');
    const i = this.state.snapshots.findIndex((s) => s.id === id);
    if (i < 0) return;
    rmSync(this.snapshotFile(id), { force: true });
    this.state.snapshots.splice(i, 1);
    this.save();
    this.log(`DeleteSnapshot ${id}`);
  }

  listSnapshots(req: ListSnapshotsRequest): { entries: { snapshot: Snapshot }[]; next_token: string } {
    if (req.max_entries < 0) throw new CsiError(grpc.status.INVALID_ARGUMENT, `max_entries must not be negative, got ${req.max_entries}`);
    const all = this.state.snapshots.filter(
      (s) => (req.snapshot_id === '' || s.id === req.snapshot_id) && (req.source_volume_id === '' || s.sourceVolumeId === req.source_volume_id),
    );
    let start = 0;
    if (req.starting_token !== '') {
      start = Number(req.starting_token);
      if (!/^\d+$/.test(req.starting_token) || start > all.length)
        throw new CsiError(grpc.status.ABORTED, `starting_token ${JSON.stringify(req.starting_token)} is not a token this driver returned`);
    }
    const end = req.max_entries > 0 ? Math.min(all.length, start + req.max_entries) : all.length;
    return { entries: all.slice(start, end).map((s) => ({ snapshot: snapshotMessage(s) })), next_token: end < all.length ? String(end) : '' };
  }

  validateCapabilities(req: ValidateVolumeCapabilitiesRequest): { confirmed: unknown; message: string } {
    requireField(req.volume_id, 'volume_id');
    if (req.volume_capabilities.length === 0) throw new CsiError(grpc.status.INVALID_ARGUMENT, 'volume_capabilities is required');
    if (this.findVolume(req.volume_id) === undefined) throw new CsiError(grpc.status.NOT_FOUND, `volume ${req.volume_id} not found`);
    const why = req.volume_capabilities.map((c, i) => unsupportedCapability(c, `volume_capabilities[${i}]`)).find((w) => w !== undefined);
    if (why !== undefined) return { confirmed: null, message: why };
    return { confirmed: { volume_context: req.volume_context, volume_capabilities: req.volume_capabilities, parameters: req.parameters }, message: '' };
  }

  nodePublish(req: NodePublishVolumeRequest): void {
    requireField(req.volume_id, 'volume_id');
    requireField(req.target_path, 'target_path');
    if (req.volume_capability === null) throw new CsiError(grpc.status.INVALID_ARGUMENT, 'volume_capability is required');
    const why = unsupportedCapability(req.volume_capability, 'volume_capability');
    if (why !== undefined) throw new CsiError(grpc.status.INVALID_ARGUMENT, why);
    if (this.findVolume(req.volume_id) === undefined) throw new CsiError(grpc.status.NOT_FOUND, `volume ${req.volume_id} not found`);
    const dir = this.volumeDir(req.volume_id);
    const st = lstatSync(req.target_path, { throwIfNoEntry: false });
    if (st?.isSymbolicLink() === true) {
      if (readlinkSync(req.target_path) === dir) return; // already published here
      throw new CsiError(grpc.status.ALREADY_EXISTS, `target_path ${req.target_path} already publishes another volume`);
    }
    if (st !== undefined) {
      if (!st.isDirectory() || readdirSync(req.target_path).length > 0)
        throw new CsiError(grpc.status.FAILED_PRECONDITION, `target_path ${req.target_path} exists and is not an empty folder`);
      rmdirSync(req.target_path);
    }
    symlinkSync(dir, req.target_path);
    this.log(`NodePublishVolume ${req.volume_id} at ${req.target_path}`);
  }

  nodeUnpublish(req: NodeUnpublishVolumeRequest): void {
    requireField(req.volume_id, 'volume_id');
    requireField(req.target_path, 'target_path');
    if (this.findVolume(req.volume_id) === undefined) throw new CsiError(grpc.status.NOT_FOUND, `volume ${req.volume_id} not found`);
    if (lstatSync(req.target_path, { throwIfNoEntry: false })?.isSymbolicLink() === true) rmSync(req.target_path);
  }
}

/** One state change at a time: tar runs asynchronously and the snapshotter may send calls concurrently. */
function serialiser(): <T>(fn: () => Promise<T> | T) => Promise<T> {
  let queue: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T> | T): Promise<T> => {
    const next = queue.then(fn, fn);
    queue = next.catch(() => undefined);
    return next;
  };
}

/** A gRPC unary handler around `fn`: its result is the response, a CsiError its status, anything else INTERNAL. */
function unary<Req>(callCounts: Map<string, number>, log: (m: string) => void, method: string, fn: (req: Req) => unknown): grpc.handleUnaryCall<Req, unknown> {
  return (call, callback) => {
    callCounts.set(method, (callCounts.get(method) ?? 0) + 1);
    Promise.resolve()
      .then(() => fn(call.request))
      .then(
        (res) => callback(null, res),
        (e: unknown) => {
          const code = e instanceof CsiError ? e.code : grpc.status.INTERNAL;
          const details = e instanceof Error ? e.message : String(e);
          log(`${method}: ${grpc.status[code]}: ${details}`);
          callback({ code, details });
        },
      );
  };
}

/** The Identity, Controller and Node services over the store; calls that change state go through `serial`. */
function csiServer(
  store: StandInStore,
  name: string,
  nodeId: string,
  serial: <T>(fn: () => Promise<T> | T) => Promise<T>,
  callCounts: Map<string, number>,
): grpc.Server {
  const handler = <Req>(method: string, fn: (req: Req) => unknown): grpc.handleUnaryCall<Req, unknown> => unary(callCounts, store.log, method, fn);
  const controllerCaps = ['CREATE_DELETE_VOLUME', 'CREATE_DELETE_SNAPSHOT', 'LIST_SNAPSHOTS'].map((type) => ({ rpc: { type } }));
  const server = new grpc.Server();
  server.addService(IdentityService.service, {
    GetPluginInfo: handler('GetPluginInfo', () => ({ name, vendor_version: VENDOR_VERSION, manifest: { 'csi-spec': CSI_SPEC_VERSION } })),
    GetPluginCapabilities: handler('GetPluginCapabilities', () => ({ capabilities: [{ service: { type: 'CONTROLLER_SERVICE' } }] })),
    Probe: handler('Probe', () => ({ ready: { value: true } })),
  });
  server.addService(ControllerService.service, {
    ControllerGetCapabilities: handler('ControllerGetCapabilities', () => ({ capabilities: controllerCaps })),
    CreateVolume: handler('CreateVolume', (req: CreateVolumeRequest) => serial(async () => ({ volume: volumeMessage(await store.createVolume(req)) }))),
    DeleteVolume: handler('DeleteVolume', (req: { volume_id: string }) => serial(() => (store.deleteVolume(req.volume_id), {}))),
    ValidateVolumeCapabilities: handler('ValidateVolumeCapabilities', (req: ValidateVolumeCapabilitiesRequest) => store.validateCapabilities(req)),
    CreateSnapshot: handler('CreateSnapshot', (req: CreateSnapshotRequest) =>
      serial(async () => ({ snapshot: snapshotMessage(await store.createSnapshot(req)) })),
    ),
    DeleteSnapshot: handler('DeleteSnapshot', (req: { snapshot_id: string }) => serial(() => (store.deleteSnapshot(req.snapshot_id), {}))),
    ListSnapshots: handler('ListSnapshots', (req: ListSnapshotsRequest) => store.listSnapshots(req)),
  });
  server.addService(NodeService.service, {
    NodeGetCapabilities: handler('NodeGetCapabilities', () => ({ capabilities: [] })),
    NodeGetInfo: handler('NodeGetInfo', () => ({ node_id: nodeId, max_volumes_per_node: 0 })),
    NodePublishVolume: handler('NodePublishVolume', (req: NodePublishVolumeRequest) => serial(() => (store.nodePublish(req), {}))),
    NodeUnpublishVolume: handler('NodeUnpublishVolume', (req: NodeUnpublishVolumeRequest) => serial(() => (store.nodeUnpublish(req), {}))),
  });
  return server;
}

export async function startStandInCsiDriver(opts: StandInCsiDriverOptions): Promise<StandInCsiDriver> {
  const stateDir = opts.stateDir;
  const name = opts.name ?? STAND_IN_DRIVER_NAME;
  const nodeId = opts.nodeId ?? 'stand-in-node';
  const socketPath = opts.socketPath ?? join(stateDir, 'csi.sock');
  const capacity = opts.capacityBytes;
  if (capacity !== undefined && !(Number.isSafeInteger(capacity) && capacity >= 0))
    throw new Error(`capacityBytes must be a non-negative integer, got ${capacity}`);
  const store = new StandInStore(stateDir, capacity, opts.log ?? ((): void => undefined));
  const serial = serialiser();
  const callCounts = new Map<string, number>();
  const server = csiServer(store, name, nodeId, serial, callCounts);

  rmSync(socketPath, { force: true }); // a socket left by a killed driver
  const address = `unix://${socketPath}`;
  await new Promise<void>((resolve, reject) => server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve())));

  let stopped: Promise<void> | undefined;
  return {
    name,
    socketPath,
    address,
    stateDir,
    volumeDir: (id) => store.volumeDir(id),
    snapshotFile: (id) => store.snapshotFile(id),
    volumes: () => store.state.volumes.map((v) => ({ ...v })),
    snapshots: () => store.state.snapshots.map((s) => ({ ...s })),
    calls: (method) => callCounts.get(method) ?? 0,
    createVolume: (volName, capacityBytes) =>
      serial(() =>
        store.createVolume({
          name: volName,
          capacity_range: capacityBytes !== undefined ? { required_bytes: capacityBytes, limit_bytes: 0 } : null,
          volume_capabilities: [
            { access_type: 'mount', mount: { fs_type: '', mount_flags: [], volume_mount_group: '' }, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
          ],
          parameters: {},
          volume_content_source: null,
        }),
      ),
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          rmSync(socketPath, { force: true });
          resolve();
        };
        // Open streams of a client that never hangs up would hold tryShutdown forever.
        const timer = setTimeout(() => {
          server.forceShutdown();
          done();
        }, 2000);
        server.tryShutdown(done);
      });
      return stopped;
    },
  };
}
