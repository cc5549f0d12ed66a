/**
 * kube-scheduler's NodePorts (`HostPortInfo.CheckConflict`): a wanted host port conflicts with a used one of
 * the same protocol and port when either binds 0.0.0.0 (every address) or both bind the same address.
 * Used ports live in the node state (`NodeState.hostPorts`, kept by allocate/release), so a placement bumps
 * the node's version and score indices re-check it like any other change.
 */
import type { HostPort } from './pod.ts';

export const ANY_IP = '0.0.0.0';

/** Counts of used host ports on one node: by `protocol/port` over every address, and by `protocol/port@ip`. */
export type UsedPorts = Map<string, number>;

const anyKey = (p: HostPort): string => `${p.protocol}/${p.port}`;
const ipKey = (p: HostPort, ip: string): string => `${p.protocol}/${p.port}@${ip}`;

export function portsConflict(used: UsedPorts | undefined, wanted: readonly HostPort[]): boolean {
  if (used === undefined || used.size === 0) return false;
  for (const p of wanted) {
    if (p.ip === ANY_IP) {
      if ((used.get(anyKey(p)) ?? 0) > 0) return true;
    } else if ((used.get(ipKey(p, ANY_IP)) ?? 0) > 0 || (used.get(ipKey(p, p.ip)) ?? 0) > 0) return true;
  }
  return false;
}

/** `node`: the snapshot's NodeState (its used ports). */
export function nodePortsFit(wanted: readonly HostPort[], node: { readonly hostPorts: UsedPorts | undefined }): boolean {
  return !portsConflict(node.hostPorts, wanted);
}

/** Adds (+1) or removes (−1) a pod's ports. */
export function usePorts(used: UsedPorts, ports: readonly HostPort[], delta: 1 | -1): void {
  for (const p of ports) {
    for (const k of [anyKey(p), ipKey(p, p.ip)]) {
      const c = (used.get(k) ?? 0) + delta;
      if (c <= 0) used.delete(k);
      else used.set(k, c);
    }
  }
}
