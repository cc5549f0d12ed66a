import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { devPodAddress, engineArgs, EnginePods, mapPath, probePort, probeStep, sideContainerLaunch } from './engine-pods.ts';

const c: V1Container = { name: 'server', image: 'ghcr.io/ggml-org/llama.cpp:server-cuda', args: ['--model', '/mnt/models', '--host', '0.0.0.0', '--port', '8080'], ports: [{ name: 'http', containerPort: 8080 }] };
const pod = (image: string): V1Pod => ({ spec: { containers: [{ ...c, image }] } });

describe('engine pods', () => {
  it("maps the dev pod network's pod IPs to their loopback aliases and leaves other addresses alone", () => {
    expect(devPodAddress('100.64.0.1')).toBe('127.64.0.1');
    expect(devPodAddress('100.127.2.3')).toBe('127.127.2.3');
    expect(devPodAddress('100.63.0.1')).toBe('100.63.0.1');
    expect(devPodAddress('10.0.0.2')).toBe('10.0.0.2');
    const e = new EnginePods({ paths: {} });
    const ip = e.allocateIp();
    expect(ip).toMatch(/^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.0\.1$/);
    expect(e.allocateIp()).not.toBe(ip);
  });
  it('binds the engine to the pod address, as the container would bind 0.0.0.0 in its own network', () => {
    expect(engineArgs(c, '127.64.0.1')).toEqual(['--model', '/mnt/models', '--host', '127.64.0.1', '--port', '8080']);
    expect(engineArgs({ name: 'x', args: ['--model', 'm'] }, '127.64.0.2')).toEqual(['--model', 'm', '--host', '127.64.0.2']);
  });
  it("resolves the probe's port by number or by the container port's name", () => {
    expect(probePort(c, 'http')).toBe(8080);
    expect(probePort(c, 9000)).toBe(9000);
    expect(probePort(c, '9001')).toBe(9001);
    expect(probePort(c, 'metrics')).toBeUndefined();
  });
  it("takes llama.cpp's server images, and nothing else, unless told otherwise", () => {
    const e = new EnginePods({ paths: {} });
    expect(e.matches(pod('ghcr.io/ggml-org/llama.cpp:server'))).toBe(true);
    expect(e.matches(pod('ghcr.io/ggml-org/llama.cpp:server-cuda'))).toBe(true);
    expect(e.matches(pod('vllm/vllm-openai:v0.8.5'))).toBe(false);
    expect(e.matches(pod('ghcr.io/ggml-org/llama.cpp:full'))).toBe(false);
    expect(new EnginePods({ paths: {}, matches: () => true }).matches(pod('busybox'))).toBe(true);
  });
  it("keeps the kubelet's probe thresholds: unready after failureThreshold failures in a row, ready after successThreshold successes", () => {
    const run = (results: boolean[], probe: { failureThreshold?: number; successThreshold?: number } | undefined, exitedAt = -1): boolean[] => {
      let s = { ready: false, streak: 0 };
      return results.map((ok, i) => (s = probeStep(s, ok, probe, i === exitedAt)).ready);
    };
    // Defaults: ready on the first success, unready on the third failure in a row; a success in between resets.
    expect(run([true, false, false, true, false, false, false], undefined)).toEqual([true, true, true, true, true, true, false]);
    expect(run([false, true, true, false, true, true], { successThreshold: 2 })).toEqual([false, false, true, true, true, true]);
    expect(run([true, false], { failureThreshold: 1 })).toEqual([true, false]);
    // A container that exited is unready at once, whatever the threshold.
    expect(run([true, false, false], { failureThreshold: 5 }, 1)).toEqual([true, false, false]);
  });
});

describe('a sits side container (the batch worker) as the kubelet would start it', () => {
  it('fills downward-API env, expands $(VAR) in args and maps container paths to this machine', () => {
    const c: V1Container = {
      name: 'batch-worker',
      command: ['sits', 'batch-worker'],
      args: ['--input', '/mnt/batch/data/in.jsonl', '--engine', 'http://$(POD_IP):8080', '--keep', '$(UNSET)'],
      env: [
        { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
        { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
        { name: 'MODE', value: 'x' },
      ],
    };
    const pod: V1Pod = { metadata: { name: 'j-0', namespace: 'ns', uid: 'u' }, spec: { containers: [{ name: 'server' }, c] } };
    const { args, env } = sideContainerLaunch(c, pod, '100.70.0.5', { '/mnt/batch': '/tmp/vol' });
    expect(env).toEqual({ POD_NAME: 'j-0', POD_NAMESPACE: 'ns', POD_IP: '127.70.0.5', MODE: 'x' });
    expect(args).toEqual(['batch-worker', '--input', '/tmp/vol/data/in.jsonl', '--engine', 'http://127.70.0.5:8080', '--keep', '$(UNSET)']);
  });
  it('maps exact paths and paths under a mapped folder, nothing else', () => {
    const paths = { '/mnt/models': '/m/tiny.gguf', '/mnt/batch': '/v' };
    expect(mapPath(paths, '/mnt/models')).toBe('/m/tiny.gguf');
    expect(mapPath(paths, '/mnt/batch/a/b')).toBe('/v/a/b');
    expect(mapPath(paths, '/mnt/batchy')).toBe('/mnt/batchy');
  });
});
