/**
 * X.509 material for SITS's HTTPS endpoints, generated with @peculiar/x509 over WebCrypto (ECDSA P-256):
 * a CA and serving certificates it signs (the webhook's `caBundle` is that CA), and self-signed serving
 * certificates for endpoints without a configured certificate (kube-scheduler generates one in memory too).
 * PEM in and out, so the material can live in a Secret and be handed to `tls.createSecureContext`.
 */
// @peculiar/x509 2.x resolves its ASN.1 providers through tsyringe, which needs a Reflect metadata polyfill.
import 'reflect-metadata';
import { webcrypto, X509Certificate as NodeX509 } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface CertPair {
  readonly cert: string;
  readonly key: string;
}

export interface CertificateAuthority extends CertPair {
  readonly keys: CryptoKeyPair;
  readonly certificate: x509.X509Certificate;
}

async function pemKey(k: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', k as unknown as webcrypto.CryptoKey);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

const serial = (): string =>
  Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
    .toString('hex')
    .replace(/^[89a-f]/, '1');

/** Certificates start a minute early: a peer whose clock is slightly behind still accepts a fresh one. */
export const BACKDATE_MS = 60_000;

function validity(now: Date, lifetimeMs: number): { notBefore: Date; notAfter: Date } {
  return { notBefore: new Date(now.getTime() - BACKDATE_MS), notAfter: new Date(now.getTime() + lifetimeMs) };
}

export async function createCa(commonName: string, lifetimeMs: number, now = new Date()): Promise<CertificateAuthority> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as unknown as CryptoKeyPair;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${commonName}`,
    ...validity(now, lifetimeMs),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { keys, certificate, cert: certificate.toString('pem'), key: await pemKey(keys.privateKey) };
}

export interface LeafOptions {
  readonly commonName: string;
  /** DNS names and IP addresses (SANs). */
  readonly dnsNames?: readonly string[];
  readonly ips?: readonly string[];
  readonly lifetimeMs: number;
  /** serverAuth (default) or clientAuth (a client certificate: CN = user, O = groups). */
  readonly usage?: 'server' | 'client';
  readonly organizations?: readonly string[];
  readonly now?: Date;
}

/** A certificate signed by `ca` (serving: SANs; client: CN/O as the apiserver maps them to user/groups). */
export async function issue(ca: CertificateAuthority, o: LeafOptions): Promise<CertPair> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as unknown as CryptoKeyPair;
  const names = [...(o.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })), ...(o.ips ?? []).map((value) => ({ type: 'ip' as const, value }))];
  const subject = [`CN=${o.commonName}`, ...(o.organizations ?? []).map((g) => `O=${g}`)].join(', ');
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject,
    issuer: ca.certificate.subject,
    ...validity(o.now ?? new Date(), o.lifetimeMs),
    signingAlgorithm: ALG,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([o.usage === 'client' ? x509.ExtendedKeyUsage.clientAuth : x509.ExtendedKeyUsage.serverAuth], false),
      ...(names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names, false)] : []),
      await x509.AuthorityKeyIdentifierExtension.create(ca.keys.publicKey),
    ],
  });
  return { cert: cert.toString('pem'), key: await pemKey(keys.privateKey) };
}

/** A serving certificate for an endpoint without one: its own throw-away CA, returned as the CA too. */
export async function selfSignedServing(
  dnsNames: readonly string[],
  ips: readonly string[],
  lifetimeMs = 365 * 86_400_000,
): Promise<CertPair & { readonly ca: string }> {
  const ca = await createCa(`sits-self-signed-ca@${Math.floor(Date.now() / 1000)}`, lifetimeMs);
  const leaf = await issue(ca, { commonName: dnsNames[0] ?? ips[0] ?? 'localhost', dnsNames, ips, lifetimeMs });
  return { ...leaf, ca: ca.cert };
}

/** Re-reads a CA from PEM (the one kept in a Secret), so it can sign again. */
export async function loadCa(pair: CertPair): Promise<CertificateAuthority> {
  const certificate = new x509.X509Certificate(pair.cert);
  const der = x509.PemConverter.decodeFirst(pair.key);
  const privateKey = (await webcrypto.subtle.importKey('pkcs8', der, ALG, true, ['sign'])) as unknown as CryptoKey;
  const publicKey = await certificate.publicKey.export(ALG, ['verify']);
  return { keys: { privateKey, publicKey }, certificate, cert: pair.cert, key: pair.key };
}

/** notBefore/notAfter of a PEM certificate (node's own parser: no trust in the caller's bookkeeping). */
export function certValidity(pem: string): { readonly notBefore: Date; readonly notAfter: Date } {
  const c = new NodeX509(pem);
  return { notBefore: new Date(c.validFrom), notAfter: new Date(c.validTo) };
}

/** The DNS names and IP addresses a PEM certificate is valid for (its subjectAltName). */
export function certNames(pem: string): { readonly dns: readonly string[]; readonly ips: readonly string[] } {
  const san = new NodeX509(pem).subjectAltName ?? '';
  const parts = san.split(',').map((s) => s.trim());
  return {
    dns: parts.filter((p) => p.startsWith('DNS:')).map((p) => p.slice(4)),
    ips: parts.filter((p) => p.startsWith('IP Address:')).map((p) => p.slice(11)),
  };
}

/** `pem` was signed by the CA certificate `caPem` (false on anything unreadable). */
export function issuedBy(pem: string, caPem: string): boolean {
  try {
    const ca = new NodeX509(caPem);
    const c = new NodeX509(pem);
    return c.checkIssued(ca) && c.verify(ca.publicKey);
  } catch {
    return false;
  }
}

/**
 * Certificate and key files renewed in place (cert-manager, a mounted Secret): polled every `intervalMs`, and
 * the pair handed to `onChange` when either file's mtime moved and both read. Returns the stop function.
 */
export function watchCertFiles(
  files: { readonly certFile: string; readonly keyFile: string },
  intervalMs: number,
  onChange: (pair: CertPair) => void,
  log: (m: string) => void,
): () => void {
  const stamp = (): string => `${statSync(files.certFile).mtimeMs}/${statSync(files.keyFile).mtimeMs}`;
  let seen = stamp();
  // A pair that does not load is logged once per change of the files (and retried: the key may follow the cert).
  let failed = '';
  const timer = setInterval(() => {
    let now = '';
    try {
      now = stamp();
      if (now === seen) return;
      const pair = { cert: readFileSync(files.certFile, 'utf8'), key: readFileSync(files.keyFile, 'utf8') };
      onChange(pair);
      seen = now;
    } catch (e) {
      if (now !== failed) log(`certificate files ${files.certFile}, ${files.keyFile}: ${(e as Error).message}; still serving the previous certificate`);
      failed = now;
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
