import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { freePorts } from '../control-plane.ts';
import { waitFor } from '../e2e-kit.ts';
import { ensureTinyModel } from './tiny-model.ts';
import { devPodAddress, engineArgs, engineKind, EnginePods, mapPath, probePort, probeStep, sideContainerLaunch, vllmEnv } from './engine-pods.ts';

const c: V1Container = {
  name: 'server',
  image: 'ghcr.io/ggml-org/llama.cpp:server-cuda',
  args: ['--model', '/mnt/models', '--host', '0.0.0.0', '--port', '8080'],
  ports: [{ name: 'http', containerPort: 8080 }],
};
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
  it("takes llama.cpp's server images and vLLM's, each to its stand-in, and nothing else unless told otherwise", () => {
    const e = new EnginePods({ paths: {} });
    expect(e.matches(pod('ghcr.io/ggml-org/llama.cpp:server'))).toBe(true);
    expect(e.matches(pod('ghcr.io/ggml-org/llama.cpp:server-cuda'))).toBe(true);
    expect(e.matches(pod('vllm/vllm-openai:v0.8.5'))).toBe(true);
    expect(e.matches(pod('ghcr.io/ggml-org/llama.cpp:full'))).toBe(false);
    expect(e.matches(pod('vllm/vllm-tpu:v0.8.5'))).toBe(false);
    expect(new EnginePods({ paths: {}, matches: () => true }).matches(pod('busybox'))).toBe(true);
    expect(
      ['ghcr.io/ggml-org/llama.cpp:server', 'vllm/vllm-openai:v0.10.2', 'docker.io/vllm/vllm-openai:latest', 'vllm/vllm-openai', 'busybox'].map((i) =>
        engineKind(pod(i)),
      ),
    ).toEqual(['llamacpp', 'vllm', 'vllm', 'vllm', undefined]);
  });
  it("gives the vLLM stand-in the container's env, not this process's VLLM_* variables", () => {
    const prev = process.env.VLLM_ALLOW_RUNTIME_LORA_UPDATING;
    process.env.VLLM_ALLOW_RUNTIME_LORA_UPDATING = 'True';
    try {
      const env = vllmEnv({ name: 's', env: [{ name: 'HF_HOME', value: '/cache' }] }, { metadata: { name: 'p' } }, '100.64.0.9', { '/mnt/models': '/m' });
      expect(env.VLLM_ALLOW_RUNTIME_LORA_UPDATING).toBeUndefined();
      expect(env).toMatchObject({ HF_HOME: '/cache', SITS_LLAMA_PATHS: '{"/mnt/models":"/m"}' });
      expect(env.PATH).toBe(process.env.PATH);
      expect(
        vllmEnv({ name: 's', env: [{ name: 'VLLM_ALLOW_RUNTIME_LORA_UPDATING', value: 'True' }] }, {}, '100.64.0.9', {}).VLLM_ALLOW_RUNTIME_LORA_UPDATING,
      ).toBe('True');
    } finally {
      if (prev === undefined) delete process.env.VLLM_ALLOW_RUNTIME_LORA_UPDATING;
      else process.env.VLLM_ALLOW_RUNTIME_LORA_UPDATING = prev;
    }
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

describe('a vLLM pod', () => {
  it("runs the vLLM stand-in with the pod's args and env on the pod's address; the runtime LoRA API works", async () => {
    const { model, lora } = ensureTinyModel();
    const [port] = (await freePorts(1)) as [number];
    // The container serving/runtimes/vllm.ts renders for one adapter (the harness may not import serving).
    const c: V1Container = {
      name: 'server',
      image: 'vllm/vllm-openai:v0.10.2',
      args: [
        '--model',
        '/mnt/models',
        '--served-model-name',
        'tiny',
        '--port',
        String(port),
        '--tensor-parallel-size',
        '1',
        '--enable-lora',
        '--max-loras',
        '1',
      ],
      env: [{ name: 'VLLM_ALLOW_RUNTIME_LORA_UPDATING', value: 'True' }],
      readinessProbe: { httpGet: { path: '/health', port: 'http' } },
      ports: [{ name: 'http', containerPort: port }],
    };
    const logs: string[] = [];
    const e = new EnginePods({ paths: { '/mnt/models': model, '/mnt/adapters/sql': lora }, probeEveryMs: 100, log: (l) => logs.push(l) });
    const ip = e.allocateIp();
    let ready = false;
    e.start('uid-1', { metadata: { name: 'p' }, spec: { containers: [c] } }, ip, (x) => (ready = x));
    try {
      await waitFor('the vLLM stand-in ready', async () => ready, 60_000);
      expect(e.address('uid-1')).toEqual({ ip: devPodAddress(ip), port });
      const url = `http://${devPodAddress(ip)}:${port}`;
      const load = await fetch(`${url}/v1/load_lora_adapter`, { method: 'POST', body: JSON.stringify({ lora_name: 'sql', lora_path: '/mnt/adapters/sql' }) });
      expect(await load.text()).toBe("Success: LoRA adapter 'sql' added successfully.");
      const done = await fetch(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'sql', prompt: 'the', max_tokens: 3 }) });
      expect(done.status).toBe(200);
    } finally {
      await e.stopAll();
    }
    expect(logs.some((l) => l.includes('vllm stand-in listening'))).toBe(true);
  });
});
