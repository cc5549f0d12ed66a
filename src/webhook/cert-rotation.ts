/**
 * The webhook's own certificates, kept the way Kueue and Gatekeeper keep theirs (open-policy-agent
 * cert-controller): a CA and a serving certificate in a Secret, the CA written into the `caBundle` of the
 * webhook configurations, both renewed before they expire.
 * - Renewal starts when a third of a certificate's lifetime remains. A new CA is published in the
 *   `caBundle` together with the old one while the old serving certificate is still served; the next pass
 *   issues a certificate from the new CA, and the pass after drops the old CA from the bundle. No apiserver
 *   holds a bundle that does not trust the certificate being served.
 * - Several webhook replicas share the Secret: writes carry the resourceVersion; the loser of a race reads
 *   the winner's material and uses it.
 * - `caBundle` is written only where it differs (no write storm on every check).
 */
import type { KubeClient } from '../kube/client/client.ts';
import { isStatus } from '../kube/client/client.ts';
import { BACKDATE_MS, certNames, certValidity, createCa, issue, issuedBy, loadCa, type CertPair } from '../kube/secure/certs.ts';

export interface CertRotationOptions {
  readonly secret: { readonly namespace: string; readonly name: string };
  /** DNS names the serving certificate is valid for (service.namespace.svc …). */
  readonly dnsNames: readonly string[];
  readonly ips?: readonly string[];
  /** ValidatingWebhookConfiguration / MutatingWebhookConfiguration names whose caBundle we own. */
  readonly validatingConfigs?: readonly string[];
  readonly mutatingConfigs?: readonly string[];
  readonly caLifetimeMs?: number;
  readonly certLifetimeMs?: number;
  readonly checkIntervalMs?: number;
  readonly now?: () => Date;
  readonly log?: (m: string) => void;
}

export interface ServingMaterial extends CertPair {
  /** PEM bundle the apiserver must trust (the CA, and during a CA change the previous one too). */
  readonly caBundle: string;
  readonly notAfter: Date;
}

interface SecretObj {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
  type?: string;
  data?: Record<string, string>;
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const unb64 = (s: string | undefined): string | undefined => (s === undefined ? undefined : Buffer.from(s, 'base64').toString('utf8'));

const PEM_CERT = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;
const certsIn = (bundle: string): string[] => bundle.match(PEM_CERT) ?? [];
const expired = (pem: string, now: Date): boolean => {
  try {
    return certValidity(pem).notAfter.getTime() <= now.getTime();
  } catch {
    return true;
  }
};

export class CertRotation {
  private timer: ReturnType<typeof setInterval> | undefined;
  private current: ServingMaterial | undefined;
  private readonly listeners: ((m: ServingMaterial) => void)[] = [];
  private readonly caLifetimeMs: number;
  private readonly certLifetimeMs: number;
  private checking: Promise<ServingMaterial> | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly o: CertRotationOptions,
  ) {
    this.caLifetimeMs = o.caLifetimeMs ?? 10 * 365 * 86_400_000;
    this.certLifetimeMs = o.certLifetimeMs ?? 365 * 86_400_000;
  }

  private now(): Date {
    return this.o.now?.() ?? new Date();
  }

  get material(): ServingMaterial | undefined {
    return this.current;
  }

  onRotate(f: (m: ServingMaterial) => void): void {
    this.listeners.push(f);
  }

  /** Ensures valid material (creating or renewing it), publishes the caBundle, then re-checks periodically. */
  async start(): Promise<ServingMaterial> {
    const m = await this.check();
    this.timer = setInterval(() => {
      void this.check().catch((e: unknown) => this.o.log?.(`certificates: ${(e as Error).message}`));
    }, this.o.checkIntervalMs ?? 60_000);
    this.timer.unref();
    return m;
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
  }

  /** One pass: read the Secret, renew what is due, write back, publish, hand new material to the server. */
  check(): Promise<ServingMaterial> {
    // Overlapping passes (a slow apiserver and a short interval) would race against ourselves.
    this.checking ??= this.pass().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private dueForRenewal(pem: string): boolean {
    try {
      const v = certValidity(pem);
      const life = v.notAfter.getTime() - v.notBefore.getTime() - BACKDATE_MS;
      return v.notAfter.getTime() - this.now().getTime() < life / 3;
    } catch {
      return true;
    }
  }

  private async pass(): Promise<ServingMaterial> {
    const { namespace, name } = this.o.secret;
    const path = `/api/v1/namespaces/${namespace}/secrets/${name}`;
    for (let attempt = 0; ; attempt++) {
      let secret: SecretObj | undefined;
      try {
        secret = await this.client.get<SecretObj>(path);
      } catch (e) {
        if (!isStatus(e, 404)) throw e;
      }
      const d = secret?.data ?? {};
      let caCert = unb64(d['ca.crt']);
      let caKey = unb64(d['ca.key']);
      let cert = unb64(d['tls.crt']);
      let key = unb64(d['tls.key']);
      let bundle = unb64(d['ca-bundle.crt']) ?? caCert ?? '';
      let changed = false;
      const caValid = caCert !== undefined && caKey !== undefined && !this.dueForRenewal(caCert);
      const now = this.now();
      let caRenewed = false;
      if (!caValid) {
        const ca = await createCa(`sits-webhook-ca@${Math.floor(now.getTime() / 1000)}`, this.caLifetimeMs, now);
        // The old CA stays in the bundle until the certificate it signed is replaced.
        bundle = [ca.cert, ...(caCert !== undefined ? certsIn(caCert) : [])].join('\n');
        caCert = ca.cert;
        caKey = ca.key;
        caRenewed = true;
        changed = true;
      }
      const leafUsable = cert !== undefined && key !== undefined && !expired(cert, now) && this.coversNames(cert);
      if (caRenewed && leafUsable) {
        // Publish the new CA first and keep serving the old certificate: the next pass (after the apiserver
        // has the new bundle) issues one from the new CA.
      } else if (!leafUsable || cert === undefined || key === undefined || this.dueForRenewal(cert) || !issuedBy(cert, caCert ?? '')) {
        const ca = await loadCa({ cert: caCert ?? '', key: caKey ?? '' });
        const leaf = await issue(ca, {
          commonName: this.o.dnsNames[0] ?? 'sits-webhook',
          dnsNames: this.o.dnsNames,
          ips: this.o.ips ?? [],
          lifetimeMs: this.certLifetimeMs,
          now,
        });
        cert = leaf.cert;
        key = leaf.key;
        changed = true;
      } else if (certsIn(bundle).length > 1) {
        // The serving certificate is from the new CA and has been served since the last pass: drop the old CA.
        bundle = certsIn(caCert ?? '').join('\n');
        changed = true;
      }
      if (cert === undefined || key === undefined) throw new Error('certificates: no serving certificate');
      if (changed) {
        const body: SecretObj = {
          metadata: {
            name,
            namespace,
            labels: { 'app.kubernetes.io/managed-by': 'sits-webhook' },
            ...(secret?.metadata?.resourceVersion !== undefined ? { resourceVersion: secret.metadata.resourceVersion } : {}),
          },
          type: 'kubernetes.io/tls',
          data: { 'ca.crt': b64(caCert ?? ''), 'ca.key': b64(caKey ?? ''), 'tls.crt': b64(cert), 'tls.key': b64(key), 'ca-bundle.crt': b64(bundle) },
        };
        try {
          if (secret === undefined) await this.client.post(`/api/v1/namespaces/${namespace}/secrets`, { apiVersion: 'v1', kind: 'Secret', ...body });
          else await this.client.put(path, { apiVersion: 'v1', kind: 'Secret', ...body });
        } catch (e) {
          // Another replica wrote first: take its material on the next attempt.
          if ((isStatus(e, 409) || isStatus(e, 422)) && attempt < 5) continue;
          throw e;
        }
        this.o.log?.(`certificates: ${secret === undefined ? 'created' : 'renewed'} in secret ${namespace}/${name}`);
      }
      const m: ServingMaterial = { cert, key, caBundle: bundle, notAfter: certValidity(cert).notAfter };
      await this.publish(m.caBundle);
      if (this.current === undefined || this.current.cert !== m.cert) {
        this.current = m;
        for (const f of this.listeners) f(m);
      }
      return m;
    }
  }

  private coversNames(pem: string): boolean {
    try {
      const have = certNames(pem);
      return this.o.dnsNames.every((n) => have.dns.includes(n)) && (this.o.ips ?? []).every((ip) => have.ips.includes(ip));
    } catch {
      return false;
    }
  }

  /** Writes the caBundle into every webhook of the named configurations where it differs. */
  private async publish(caBundle: string): Promise<void> {
    const want = b64(caBundle);
    const kinds = [
      ['validatingwebhookconfigurations', this.o.validatingConfigs ?? []],
      ['mutatingwebhookconfigurations', this.o.mutatingConfigs ?? []],
    ] as const;
    for (const [resource, names] of kinds) {
      for (const cfgName of names) {
        const path = `/apis/admissionregistration.k8s.io/v1/${resource}/${cfgName}`;
        for (let attempt = 0; attempt < 5; attempt++) {
          let cfg: { webhooks?: { clientConfig?: { caBundle?: string } }[] };
          try {
            cfg = await this.client.get(path);
          } catch (e) {
            // Not installed (yet): nothing to publish into; the next pass tries again.
            if (isStatus(e, 404)) break;
            throw e;
          }
          const hooks = cfg.webhooks ?? [];
          if (hooks.every((h) => h.clientConfig?.caBundle === want)) break;
          for (const h of hooks) h.clientConfig = { ...(h.clientConfig ?? {}), caBundle: want };
          try {
            await this.client.put(path, cfg);
            this.o.log?.(`certificates: caBundle published to ${resource}/${cfgName}`);
            break;
          } catch (e) {
            if (!isStatus(e, 409)) throw e;
          }
        }
      }
    }
  }
}
