// The kube bench reads kube-apiserver's and kube-scheduler's /metrics with the one strict parser
// (harness/prom-text.ts): this checks that real output of both parses, and that the numbers the bench
// computes from it count what happened (three pods scheduled by kube-scheduler).
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { parsePromText, promSamples, type FamilyType } from '../../harness/prom-text.ts';
import { ensureK8sBinaries, startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createFakeGpuNodes, createNamespace } from '../../harness/fake-nodes.ts';
import { waitFor } from '../../harness/e2e-kit.ts';
import { histogramDelta, kubeSchedulerConfigYaml, promSum } from './measure.ts';

function getText(url: string, token: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 20_000 }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (data += d));
      res.on('end', () => (res.statusCode === 200 ? resolve(data) : reject(new Error(`GET ${url}: ${res.statusCode}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

const pod = (name: string): V1Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'prom' },
  spec: { containers: [{ name: 'main', image: 'example.invalid/none:0', resources: { requests: { 'nvidia.com/gpu': '1', cpu: '1' }, limits: { 'nvidia.com/gpu': '1' } } }] },
});

describe('the kube bench parses real kube-apiserver and kube-scheduler metrics', () => {
  let cp: ControlPlane | undefined;
  const plane = (): ControlPlane => {
    if (cp === undefined) throw new Error('control plane not started');
    return cp;
  };
  beforeAll(async () => {
    cp = await startControlPlane({ binDir: await ensureK8sBinaries() });
  }, 40 * 60_000);
  afterAll(async () => {
    await cp?.stop();
  }, 60_000);

  it('every family parses strictly, has the type the bench expects, and counts the pods scheduled in between', async () => {
    const kc = plane().kubeConfig();
    await createFakeGpuNodes(kc, [{ name: 'gpu-node-1', capacity: { 'nvidia.com/gpu': '8' } }]);
    await createNamespace(kc, 'prom');
    const sched = await plane().startScheduler(kubeSchedulerConfigYaml(5000, 6000)); // the bench's config
    const apiUrl = `${plane().server}/metrics`;
    const schedUrl = `${sched.url}/metrics`;
    const token = plane().token;

    const apiBefore = promSamples(await getText(apiUrl, token));
    const schedBefore = promSamples(await getText(schedUrl, token));
    const core = kc.makeApiClient(CoreV1Api);
    for (const name of ['p1', 'p2', 'p3']) await core.createNamespacedPod({ namespace: 'prom', body: pod(name) });
    await waitFor('three pods bound', async () => (await core.listNamespacedPod({ namespace: 'prom' })).items.filter((p) => p.spec?.nodeName !== undefined).length === 3, 60_000);

    const apiText = await getText(apiUrl, token);
    const schedText = await getText(schedUrl, token);
    // Strict: throws on any line, family or histogram the format does not allow.
    const apiFamilies = parsePromText(apiText);
    const schedFamilies = parsePromText(schedText);
    const typeOf = (f: typeof apiFamilies, name: string): FamilyType | undefined => f.get(name)?.type;
    expect(typeOf(apiFamilies, 'apiserver_request_duration_seconds')).toBe('histogram');
    expect(typeOf(apiFamilies, 'apiserver_request_total')).toBe('counter');
    for (const h of ['scheduler_scheduling_attempt_duration_seconds', 'scheduler_scheduling_algorithm_duration_seconds', 'scheduler_framework_extension_point_duration_seconds', 'rest_client_request_duration_seconds', 'rest_client_rate_limiter_duration_seconds']) {
      expect(typeOf(schedFamilies, h), h).toBe('histogram');
    }
    expect(typeOf(schedFamilies, 'rest_client_requests_total')).toBe('counter');
    expect(typeOf(schedFamilies, 'scheduler_schedule_attempts_total')).toBe('counter');

    // What the bench computes from two scrapes: the three attempts and the three bindings.
    const apiAfter = promSamples(apiText);
    const schedAfter = promSamples(schedText);
    expect(histogramDelta(schedBefore, schedAfter, 'scheduler_scheduling_attempt_duration_seconds', { result: 'scheduled' }).count).toBe(3);
    expect(promSum(schedAfter, 'scheduler_schedule_attempts_total', { result: 'scheduled' }) - promSum(schedBefore, 'scheduler_schedule_attempts_total', { result: 'scheduled' })).toBe(3);
    expect(histogramDelta(apiBefore, apiAfter, 'apiserver_request_duration_seconds', { verb: 'POST', resource: 'pods', subresource: 'binding' }).count).toBe(3);
    expect(histogramDelta(apiBefore, apiAfter, 'apiserver_request_duration_seconds', { verb: 'POST', resource: 'pods', subresource: '' }).count).toBe(3);
    expect(promSum(schedAfter, 'rest_client_requests_total')).toBeGreaterThan(promSum(schedBefore, 'rest_client_requests_total'));
  });
});
