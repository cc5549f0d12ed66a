/**
 * The secure-port flags of `sits extender` and `sits activator`: --tls-cert-file / --tls-private-key-file (PEM,
 * re-read when they change), --client-ca-file, --api-audiences, and --insecure-localhost for local development. Checked before
 * anything connects; an unreadable file is a CliError naming the flag and the file.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { watchCertFiles, type CertPair } from '../kube/secure/certs.ts';
import { CliError } from './errors.ts';

export interface ServingFlags {
  readonly tlsCertFile?: string;
  readonly tlsPrivateKeyFile?: string;
  readonly clientCaFile?: string;
  readonly insecureLocalhost?: boolean;
  readonly apiAudiences?: string;
}

/** What differs between the commands' secure-port flags: the default port and the help that names the caller. */
export interface ServingOptionHelp {
  readonly port: number;
  readonly portHelp: string;
  readonly clientCaHelp: string;
  readonly insecureHelp: string;
}

/**
 * Declares --kubeconfig, --port, --host, --tls-cert-file, --tls-private-key-file, --client-ca-file and
 * --insecure-localhost on `cmd`: one declaration, so the secure-port commands cannot drift apart.
 */
export function servingOptions(cmd: Command, h: ServingOptionHelp, portOption: (v: string) => number): Command {
  return cmd
    .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster service account, else $KUBECONFIG or ~/.kube/config)')
    .option('--port <port>', h.portHelp, portOption, h.port)
    .option('--host <addr>', 'address to listen on', '0.0.0.0')
    .option('--tls-cert-file <file>', 'serving certificate (PEM; re-read when it changes)')
    .option('--tls-private-key-file <file>', 'key of --tls-cert-file')
    .option('--client-ca-file <file>', h.clientCaHelp)
    .option('--api-audiences <list>', API_AUDIENCES_HELP)
    .option('--insecure-localhost', h.insecureHelp);
}

export const API_AUDIENCES_HELP =
  "comma-separated token audiences this server accepts (as kube-apiserver's --api-audiences): TokenReviews ask for them and a token meant for another audience (e.g. the apiserver's) is refused; default: the apiserver's audiences";

/** --api-audiences: a comma-separated list of non-empty audiences, or undefined when not given. */
export function parseAudiences(v: string | undefined): readonly string[] | undefined {
  if (v === undefined) return undefined;
  const list = v.split(',').map((a) => a.trim());
  if (list.some((a) => a === '' || /\s/.test(a)))
    throw new CliError(`--api-audiences: want comma-separated audiences without spaces or empty entries, got "${v}"`);
  return list;
}

export function readFlagFile(flag: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new CliError(`${flag} ${path}: ${(e as Error).message}`);
  }
}

/** The serving certificate (none with --insecure-localhost) and the client CA, or a CliError for bad flags. */
export function servingTls(o: ServingFlags): { readonly tls?: CertPair; readonly clientCa?: string } {
  if ((o.tlsCertFile === undefined) !== (o.tlsPrivateKeyFile === undefined)) throw new CliError('--tls-cert-file and --tls-private-key-file go together');
  if (o.insecureLocalhost !== true && o.tlsCertFile === undefined)
    throw new CliError('--tls-cert-file and --tls-private-key-file are needed (or --insecure-localhost for local development)');
  const tls =
    o.insecureLocalhost === true || o.tlsCertFile === undefined || o.tlsPrivateKeyFile === undefined
      ? undefined
      : { cert: readFlagFile('--tls-cert-file', o.tlsCertFile), key: readFlagFile('--tls-private-key-file', o.tlsPrivateKeyFile) };
  const clientCa = o.clientCaFile === undefined ? undefined : readFlagFile('--client-ca-file', o.clientCaFile);
  return { ...(tls === undefined ? {} : { tls }), ...(clientCa === undefined ? {} : { clientCa }) };
}

/** A renewed certificate (cert-manager, a mounted Secret) is served from the next handshake on; returns the stop. */
export function reloadServingCert(
  o: ServingFlags,
  served: boolean,
  setTls: (p: CertPair) => void,
  log: (m: string) => void,
  intervalMs = 5000,
): (() => void) | undefined {
  if (!served || o.tlsCertFile === undefined || o.tlsPrivateKeyFile === undefined) return undefined;
  const certFile = o.tlsCertFile;
  // setTls throws on a pair that does not load (bad PEM, key of another certificate): logged, the old pair kept.
  return watchCertFiles(
    { certFile, keyFile: o.tlsPrivateKeyFile },
    intervalMs,
    (p) => {
      setTls(p);
      log(`serving certificate reloaded from ${certFile}`);
    },
    log,
  );
}
