/**
 * The activator's memory budget (ADR 0176): how many requests it may hold and how many body bytes it may buffer,
 * across every service, per namespace (the tenant) and per service, decided before a body byte is read. A
 * namespace's share is capped, and the last part of the budget (the reserve) goes only to namespaces that hold
 * nothing yet: floods fill at most the rest, so another namespace's first request still gets in and its
 * scale-from-zero still starts.
 */
import { readFileSync } from 'node:fs';

export interface BudgetLimits {
  /** Requests held (waiting for a replica) across every service. */
  readonly maxHeldRequests: number;
  /** Requests held for one service. */
  readonly maxHeldPerService: number;
  /** Request body bytes buffered across every service (held or on their way to a replica). */
  readonly maxHeldBytes: number;
  /** Largest single body. */
  readonly maxBodyBytes: number;
  /** The part of each global limit one namespace (tenant) may take, 0 < share ≤ 1. */
  readonly namespaceShare: number;
  /** The part of each global limit only namespaces holding nothing may take, 0 ≤ reserve < 1. */
  readonly reserve: number;
}

/** Why a request was refused: a metric label, and the HTTP status (429 for a tenant's share, 503 when full). */
export type Refusal =
  | { readonly reason: 'body-too-large'; readonly status: 413; readonly message: string }
  | { readonly reason: 'activator-full' | 'held-requests'; readonly status: 503; readonly message: string }
  | { readonly reason: 'namespace-share' | 'namespace-held-requests' | 'service-held-requests'; readonly status: 429; readonly message: string };

export interface Ticket {
  /** Bytes counted for this request now. */
  readonly bytes: number;
  /** Counts `n` more body bytes (a chunk as it arrives); a refusal means: stop reading, answer it. */
  grow(n: number): Refusal | undefined;
  /** Counts the request as held (waiting for a replica); a refusal means: answer it, do not hold. */
  hold(): Refusal | undefined;
  /** No longer held (forwarded, timed out or the client left); its bytes stay counted until release. */
  unhold(): void;
  /** Returns every byte and the held slot to the budget. Idempotent. */
  release(): void;
}

interface Usage {
  bytes: number;
  held: number;
  /** Tickets using this entry. */
  users: number;
}

const MiB = 1 << 20;

/** Defaults from the container's memory limit: half of it for bodies, 64 KiB of it per held request. */
export function budgetFromMemory(memoryLimitBytes: number, maxBodyBytes = 16 * MiB): BudgetLimits {
  const maxHeldBytes = Math.floor(memoryLimitBytes / 2);
  const maxHeldRequests = Math.max(1, Math.floor(memoryLimitBytes / (64 << 10)));
  return {
    maxHeldBytes,
    maxHeldRequests,
    maxHeldPerService: Math.min(1000, maxHeldRequests),
    maxBodyBytes: Math.min(maxBodyBytes, Math.floor(maxHeldBytes / 4)),
    namespaceShare: 0.5,
    reserve: 0.25,
  };
}

/**
 * The container's memory limit: the smaller of `SITS_MEMORY_LIMIT` (bytes; the chart sets it from `limits.memory`
 * through the downward API, which gives the node's allocatable memory when no limit is set) and the cgroup's (v2
 * memory.max, v1 memory.limit_in_bytes); undefined when neither is known.
 */
export function detectMemoryLimit(env: NodeJS.ProcessEnv = process.env, read: (p: string) => string = (p) => readFileSync(p, 'utf8')): number | undefined {
  const fromEnv = env.SITS_MEMORY_LIMIT;
  let limit: number | undefined;
  if (fromEnv !== undefined && fromEnv !== '') {
    limit = Number(fromEnv);
    if (!Number.isSafeInteger(limit) || limit <= 0) throw new Error(`SITS_MEMORY_LIMIT: ${JSON.stringify(fromEnv)} is not a positive number of bytes`);
  }
  const cgroup = cgroupLimit(read);
  return limit === undefined ? cgroup : cgroup === undefined ? limit : Math.min(limit, cgroup);
}

function cgroupLimit(read: (p: string) => string): number | undefined {
  for (const p of ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']) {
    let text: string;
    try {
      text = read(p).trim();
    } catch {
      continue;
    }
    const n = Number(text);
    // "max" (v2) or a huge number (v1, 2^63 rounded to pages): no limit.
    if (Number.isSafeInteger(n) && n > 0 && n < 2 ** 50) return n;
  }
  return undefined;
}

/** Throws a message naming the field when the limits cannot work together. */
export function checkLimits(l: BudgetLimits): void {
  const int = (name: string, v: number, min: number): void => {
    if (!Number.isSafeInteger(v) || v < min) throw new Error(`${name}: ${v} must be a whole number ≥ ${min}`);
  };
  int('maxHeldRequests', l.maxHeldRequests, 1);
  int('maxHeldPerService', l.maxHeldPerService, 1);
  int('maxHeldBytes', l.maxHeldBytes, 1);
  int('maxBodyBytes', l.maxBodyBytes, 0);
  if (!(l.namespaceShare > 0 && l.namespaceShare <= 1)) throw new Error(`namespaceShare: ${l.namespaceShare} must be in (0, 1]`);
  if (!(l.reserve >= 0 && l.reserve < 1)) throw new Error(`reserve: ${l.reserve} must be in [0, 1)`);
  if (l.maxBodyBytes > l.maxHeldBytes * l.namespaceShare)
    throw new Error(
      `maxBodyBytes: ${l.maxBodyBytes} is over one namespace's share of maxHeldBytes (${Math.floor(l.maxHeldBytes * l.namespaceShare)}): no body that large could ever be held`,
    );
}

export class HoldBudget {
  readonly limits: BudgetLimits;
  /** By service (`ns/name`) and by namespace (`ns`): an entry lives while a ticket uses it. */
  private readonly services = new Map<string, Usage>();
  private readonly namespaces = new Map<string, Usage>();
  private bytes = 0;
  private held = 0;

  constructor(limits: BudgetLimits) {
    checkLimits(limits);
    this.limits = limits;
  }

  /** Body bytes counted now: across services, or for one service (`ns/name`). */
  bytesUsed(service?: string): number {
    return service === undefined ? this.bytes : (this.services.get(service)?.bytes ?? 0);
  }

  /** Requests held now: across services, or for one service (`ns/name`). */
  heldNow(service?: string): number {
    return service === undefined ? this.held : (this.services.get(service)?.held ?? 0);
  }

  /**
   * A ticket for one request to `service` (`ns/name`), with `declared` bytes (its Content-Length) counted at once;
   * a chunked body starts at 0 and grows. Refused before any body byte is read.
   */
  admit(service: string, declared = 0): Ticket | Refusal {
    const l = this.limits;
    if (declared > l.maxBodyBytes)
      return { reason: 'body-too-large', status: 413, message: `request body of ${declared} bytes is over the limit of ${l.maxBodyBytes}` };
    const namespace = service.slice(0, service.indexOf('/'));
    const entry = (m: Map<string, Usage>, k: string): Usage => m.get(k) ?? { bytes: 0, held: 0, users: 0 };
    const s = entry(this.services, service);
    const t = entry(this.namespaces, namespace);
    const refused = this.checkBytes(namespace, t, declared, 0);
    if (refused !== undefined) return refused;
    this.services.set(service, s);
    this.namespaces.set(namespace, t);
    s.users++;
    t.users++;
    let mine = 0;
    let holding = false;
    let released = false;
    const add = (n: number): void => {
      mine += n;
      s.bytes += n;
      t.bytes += n;
      this.bytes += n;
    };
    add(declared);
    const ticket: Ticket = {
      get bytes() {
        return mine;
      },
      grow: (n) => {
        if (released) return undefined;
        if (mine + n > l.maxBodyBytes) return { reason: 'body-too-large', status: 413, message: `request body over the limit of ${l.maxBodyBytes} bytes` };
        const r = this.checkBytes(namespace, t, n, mine);
        if (r !== undefined) return r;
        add(n);
        return undefined;
      },
      hold: () => {
        if (released || holding) return undefined;
        const r = this.checkHeld(service, s, namespace, t);
        if (r !== undefined) return r;
        holding = true;
        s.held++;
        t.held++;
        this.held++;
        return undefined;
      },
      unhold: () => {
        if (!holding) return;
        holding = false;
        s.held--;
        t.held--;
        this.held--;
      },
      release: () => {
        if (released) return;
        ticket.unhold();
        released = true;
        s.bytes -= mine;
        t.bytes -= mine;
        this.bytes -= mine;
        mine = 0;
        if (--s.users === 0) this.services.delete(service);
        if (--t.users === 0) this.namespaces.delete(namespace);
      },
    };
    return ticket;
  }

  /** `own`: bytes this request already counts (the namespace's, but not "something else it holds"). */
  private checkBytes(namespace: string, t: Usage, n: number, own: number): Refusal | undefined {
    const l = this.limits;
    if (this.bytes + n > l.maxHeldBytes)
      return { reason: 'activator-full', status: 503, message: `the activator buffers ${this.bytes} of ${l.maxHeldBytes} body bytes: no room for ${n} more` };
    const share = Math.floor(l.maxHeldBytes * l.namespaceShare);
    if (t.bytes + n > share)
      return { reason: 'namespace-share', status: 429, message: `namespace ${namespace} already buffers ${t.bytes} body bytes, its share is ${share}` };
    // The reserve is for namespaces with nothing else buffered: their first request must get in.
    if (t.bytes - own > 0 && this.bytes + n > Math.floor(l.maxHeldBytes * (1 - l.reserve)))
      return {
        reason: 'namespace-share',
        status: 429,
        message: `namespace ${namespace} already buffers ${t.bytes} body bytes; the last ${Math.round(l.reserve * 100)}% of the activator's budget is kept for namespaces that hold nothing`,
      };
    return undefined;
  }

  private checkHeld(service: string, s: Usage, namespace: string, t: Usage): Refusal | undefined {
    const l = this.limits;
    if (this.held + 1 > l.maxHeldRequests) return { reason: 'held-requests', status: 503, message: `the activator holds ${this.held} requests, its limit` };
    if (s.held + 1 > l.maxHeldPerService)
      return { reason: 'service-held-requests', status: 429, message: `${l.maxHeldPerService} requests already wait for a replica of ${service}` };
    const share = Math.max(1, Math.floor(l.maxHeldRequests * l.namespaceShare));
    if (t.held + 1 > share)
      return { reason: 'namespace-held-requests', status: 429, message: `${share} requests of namespace ${namespace} already wait for a replica` };
    if (t.held > 0 && this.held + 1 > Math.floor(l.maxHeldRequests * (1 - l.reserve)))
      return {
        reason: 'namespace-held-requests',
        status: 429,
        message: `namespace ${namespace} already has ${t.held} requests waiting; the last ${Math.round(l.reserve * 100)}% of the activator's held requests are kept for namespaces that hold nothing`,
      };
    return undefined;
  }
}
