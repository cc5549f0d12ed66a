import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';

import { ControllerService, IdentityService } from './proto.ts';
import { startStandInCsiDriver } from './stand-in-driver.ts';
import type { StandInCsiDriver } from './stand-in-driver.ts';

const MOUNT = { access_type: 'mount', mount: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } };

function call<Res>(client: grpc.Client, method: string, req: unknown): Promise<Res> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, (r: unknown, cb: (e: grpc.ServiceError | null, v: Res) => void) => void>)[method];
    if (fn === undefined) return reject(new Error(`no method ${method}`));
    fn.call(client, req, (e, v) => (e === null ? resolve(v) : reject(e)));
  });
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (e) {
    return `${grpc.status[(e as grpc.ServiceError).code]}: ${(e as grpc.ServiceError).details}`;
  }
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(
  capacityBytes?: number,
  dir = mkdtempSync(join(tmpdir(), 'sits-csi-')),
): Promise<{ driver: StandInCsiDriver; ctl: grpc.Client; id: grpc.Client; dir: string }> {
  const driver = await startStandInCsiDriver({ stateDir: dir, ...(capacityBytes !== undefined ? { capacityBytes } : {}) });
  const ctl = new ControllerService(driver.address, grpc.credentials.createInsecure());
  const id = new IdentityService(driver.address, grpc.credentials.createInsecure());
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => driver.stop());
  cleanups.push(() => {
    ctl.close();
    id.close();
  });
  return { driver, ctl, id, dir };
}

describe('the stand-in CSI driver over gRPC', () => {
  it('names itself and serves the controller', async () => {
    const { id } = await start();
    expect(await call(id, 'GetPluginInfo', {})).toMatchObject({ name: 'stand-in.csi.sits.dev', vendor_version: '0.1.0' });
    expect(await call(id, 'GetPluginCapabilities', {})).toMatchObject({ capabilities: [{ service: { type: 'CONTROLLER_SERVICE' } }] });
    expect(await call(id, 'Probe', {})).toMatchObject({ ready: { value: true } });
  });

  it('snapshots a volume folder into a tarball and restores it into a new volume', async () => {
    const { driver, ctl } = await start();
    const { volume } = await call<{ volume: { volume_id: string; capacity_bytes: number } }>(ctl, 'CreateVolume', {
      name: 'ckpt',
      capacity_range: { required_bytes: 4096 },
      volume_capabilities: [MOUNT],
    });
    expect(volume.capacity_bytes).toBe(4096);
    mkdirSync(join(driver.volumeDir(volume.volume_id), 'step-10'));
    writeFileSync(join(driver.volumeDir(volume.volume_id), 'step-10', 'rank0.pt'), 'weights');
    const { snapshot } = await call<{ snapshot: { snapshot_id: string; size_bytes: number; ready_to_use: boolean; creation_time: { seconds: number } } }>(
      ctl,
      'CreateSnapshot',
      { name: 'snap-1', source_volume_id: volume.volume_id },
    );
    expect(snapshot).toMatchObject({ size_bytes: 4096, ready_to_use: true });
    expect(Math.abs(snapshot.creation_time.seconds - Date.now() / 1000)).toBeLessThan(60);
    expect(existsSync(driver.snapshotFile(snapshot.snapshot_id))).toBe(true);
    // The same name again is the same snapshot (idempotent); for another volume it is ALREADY_EXISTS.
    expect(
      (await call<{ snapshot: { snapshot_id: string } }>(ctl, 'CreateSnapshot', { name: 'snap-1', source_volume_id: volume.volume_id })).snapshot.snapshot_id,
    ).toBe(snapshot.snapshot_id);
    expect(await code(call(ctl, 'CreateSnapshot', { name: 'snap-1', source_volume_id: 'vol-other' }))).toMatch(
      /^ALREADY_EXISTS: snapshot snap-1 exists for another volume/,
    );

    const restored = await call<{ volume: { volume_id: string; content_source: unknown } }>(ctl, 'CreateVolume', {
      name: 'restored',
      volume_capabilities: [MOUNT],
      volume_content_source: { snapshot: { snapshot_id: snapshot.snapshot_id } },
    });
    expect(restored.volume.content_source).toMatchObject({ snapshot: { snapshot_id: snapshot.snapshot_id } });
    expect(readFileSync(join(driver.volumeDir(restored.volume.volume_id), 'step-10', 'rank0.pt'), 'utf8')).toBe('weights');

    await call(ctl, 'DeleteSnapshot', { snapshot_id: snapshot.snapshot_id });
    expect(existsSync(driver.snapshotFile(snapshot.snapshot_id))).toBe(false);
    await call(ctl, 'DeleteSnapshot', { snapshot_id: snapshot.snapshot_id }); // idempotent
  });

  it('answers bad input with the CSI error codes', async () => {
    const { ctl } = await start();
    expect(await code(call(ctl, 'CreateVolume', { volume_capabilities: [MOUNT] }))).toBe('INVALID_ARGUMENT: name is required');
    expect(await code(call(ctl, 'CreateVolume', { name: 'v' }))).toBe('INVALID_ARGUMENT: volume_capabilities is required');
    expect(await code(call(ctl, 'CreateVolume', { name: 'v', volume_capabilities: [{ block: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } }] }))).toMatch(
      /^INVALID_ARGUMENT: volume_capabilities\[0\]: block access is not supported/,
    );
    expect(await code(call(ctl, 'CreateVolume', { name: 'v', volume_capabilities: [MOUNT], capacity_range: { required_bytes: 10, limit_bytes: 5 } }))).toBe(
      'INVALID_ARGUMENT: capacity_range: required_bytes 10 exceeds limit_bytes 5',
    );
    expect(
      await code(call(ctl, 'CreateVolume', { name: 'v', volume_capabilities: [MOUNT], volume_content_source: { snapshot: { snapshot_id: 'snap-nope' } } })),
    ).toBe('NOT_FOUND: source snapshot snap-nope not found');
    await call(ctl, 'CreateVolume', { name: 'v', volume_capabilities: [MOUNT], capacity_range: { required_bytes: 100, limit_bytes: 100 } });
    expect(await code(call(ctl, 'CreateVolume', { name: 'v', volume_capabilities: [MOUNT], capacity_range: { required_bytes: 200 } }))).toMatch(
      /^ALREADY_EXISTS: volume v exists with capacity 100 bytes/,
    );
    expect(await code(call(ctl, 'CreateSnapshot', { name: 's', source_volume_id: 'vol-nope' }))).toBe('NOT_FOUND: source volume vol-nope not found');
    expect(await code(call(ctl, 'CreateSnapshot', { name: 's' }))).toBe('INVALID_ARGUMENT: source_volume_id is required');
    expect(await code(call(ctl, 'ListSnapshots', { starting_token: 'zzz' }))).toMatch(/^ABORTED: starting_token "zzz"/);
  });

  it('refuses a volume or a snapshot that does not fit in its capacity with RESOURCE_EXHAUSTED', async () => {
    const { driver, ctl } = await start(10_000);
    const { volume } = await call<{ volume: { volume_id: string } }>(ctl, 'CreateVolume', {
      name: 'a',
      capacity_range: { required_bytes: 6000 },
      volume_capabilities: [MOUNT],
    });
    expect(await code(call(ctl, 'CreateVolume', { name: 'b', capacity_range: { required_bytes: 6000 }, volume_capabilities: [MOUNT] }))).toBe(
      'RESOURCE_EXHAUSTED: storage full: volume b needs 6000 bytes; 6000 of 10000 bytes are used, 4000 free',
    );
    // Incompressible data: the tarball is bigger than what is left.
    writeFileSync(join(driver.volumeDir(volume.volume_id), 'shard.bin'), randomBytes(8000));
    expect(await code(call(ctl, 'CreateSnapshot', { name: 'full', source_volume_id: volume.volume_id }))).toMatch(
      /^RESOURCE_EXHAUSTED: storage full: snapshot full of volume vol-\w+ needs \d+ bytes; 6000 of 10000 bytes are used, 4000 free$/,
    );
    expect(driver.snapshots()).toEqual([]);
  });

  it('lists snapshots with filters and pages', async () => {
    const { ctl } = await start();
    const { volume } = await call<{ volume: { volume_id: string } }>(ctl, 'CreateVolume', { name: 'a', volume_capabilities: [MOUNT] });
    const ids: string[] = [];
    for (const n of ['s1', 's2', 's3'])
      ids.push(
        (await call<{ snapshot: { snapshot_id: string } }>(ctl, 'CreateSnapshot', { name: n, source_volume_id: volume.volume_id })).snapshot.snapshot_id,
      );
    const page1 = await call<{ entries: { snapshot: { snapshot_id: string } }[]; next_token: string }>(ctl, 'ListSnapshots', { max_entries: 2 });
    expect(page1.entries.map((e) => e.snapshot.snapshot_id)).toEqual(ids.slice(0, 2));
    const page2 = await call<{ entries: { snapshot: { snapshot_id: string } }[]; next_token: string }>(ctl, 'ListSnapshots', {
      max_entries: 2,
      starting_token: page1.next_token,
    });
    expect(page2).toMatchObject({ entries: [{ snapshot: { snapshot_id: ids[2] } }], next_token: '' });
    expect((await call<{ entries: unknown[] }>(ctl, 'ListSnapshots', { snapshot_id: ids[1] })).entries).toHaveLength(1);
    expect((await call<{ entries: unknown[] }>(ctl, 'ListSnapshots', { source_volume_id: 'vol-other' })).entries).toHaveLength(0);
  });

  it('keeps its volumes and snapshots across a restart on the same folder', async () => {
    const first = await start();
    const vol = await first.driver.createVolume('kept', 2048);
    await call(first.ctl, 'CreateSnapshot', { name: 'kept-snap', source_volume_id: vol.id });
    await first.driver.stop();
    const driver = await startStandInCsiDriver({ stateDir: first.dir, socketPath: join(first.dir, 'again.sock') });
    cleanups.push(() => driver.stop());
    expect(driver.volumes()).toEqual([{ id: vol.id, name: 'kept', capacityBytes: 2048 }]);
    expect(driver.snapshots().map((s) => s.name)).toEqual(['kept-snap']);
  });
});
