/**
 * The activator's memory budget (ADR 0176): how many requests it may hold and how many body bytes it may buffer,
 * across every service and per service, decided before a body byte is read. A service's share is capped, and the
 * last part of the budget (the reserve) goes only to services that hold nothing yet: one tenant's flood fills at
 * most the rest, so another namespace's first request still gets in and its scale-from-zero still starts.
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
  /** The part of each global limit one service may take, 0 < share ≤ 1. */
  readonly serviceShare: number;
  /** The part of each global limit only services holding nothing may take, 0 ≤ reserve < 1. */
  readonly reserve: number;
}

/** Why a request was refused: a metric label, and the HTTP status (429 for a per-service share, 503 when full). */
export type Refusal =
  | { readonly reason: 'body-too-large'; readonly status: 413; readonly message: string }
  | { readonly reason: 'activator-full' | 'held-requests'; readonly status: 503; readonly message: string }
  | { readonly reason: 'service-share' | 'service-held-requests'; readonly status: 429; readonly message: string };

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
}

const MiB = 1 << 20;

/** Defaults from the container's memory limit: half of it for bodies, 64 KiB of it per held request. */
export function budgetFromMemory(memoryLimitBytes: number, maxBodyBytes = 16 * MiB): BudgetLimits {
  const maxHeldBytes = Math.floor(memoryLimitBytes / 2);
  const maxHeldRequests = Math.max(1, Math.floor(memoryLimitBytes / (64 << 10)));
  return { maxHeldBytes, maxHeldRequests, maxHeldPerService: Math.min(1000, maxHeldRequests), maxBodyBytes: Math.min(maxBodyBytes, Math.floor(maxHeldBytes / 4)), serviceShare: 0.5, reserve: 0.25 };
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
  if (!(l.serviceShare > 0 && l.serviceShare <= 1)) throw new Error(`serviceShare: ${l.serviceShare} must be in (0, 1]`);
  if (!(l.reserve >= 0 && l.reserve < 1)) throw new Error(`reserve: ${l.reserve} must be in [0, 1)`);
  if (l.maxBodyBytes > l.maxHeldBytes * l.serviceShare) throw new Error(`maxBodyBytes: ${l.maxBodyBytes} is over one service's share of maxHeldBytes (${Math.floor(l.maxHeldBytes * l.serviceShare)}): no body that large could ever be held`);
}

export class HoldBudget {
  readonly limits: BudgetLimits;
  private readonly usage = new Map<string, Usage>();
  private bytes = 0;
  private held = 0;

  constructor(limits: BudgetLimits) {
    checkLimits(limits);
    this.limits = limits;
  }

  /** Body bytes counted now, across services or for one. */
  bytesUsed(key?: string): number {
    return key === undefined ? this.bytes : (this.usage.get(key)?.bytes ?? 0);
  }

  /** Requests held now, across services or for one. */
  heldNow(key?: string): number {
    return key === undefined ? this.held : (this.usage.get(key)?.held ?? 0);
  }

  /**
   * A ticket for one request to service `key`, with `declared` bytes (its Content-Length) counted at once; a
   * chunked body starts at 0 and grows. Refused before any body byte is read.
   */
  admit(key: string, declared = 0): Ticket | Refusal {
    const l = this.limits;
    if (declared > l.maxBodyBytes) return { reason: 'body-too-large', status: 413, message: `request body of ${declared} bytes is over the limit of ${l.maxBodyBytes}` };
    const u = this.usage.get(key) ?? { bytes: 0, held: 0 };
    const refused = this.checkBytes(key, u, declared);
    if (refused !== undefined) return refused;
    this.usage.set(key, u);
    let mine = 0;
    let holding = false;
    let released = false;
    const add = (n: number): void => {
      mine += n;
      u.bytes += n;
      this.bytes += n;
    };
    add(declared);
    // A ticket in use keeps its usage entry alive; the last one out deletes it.
    const users = (this.users.get(u) ?? 0) + 1;
    this.users.set(u, users);
    const ticket: Ticket = {
      get bytes() {
        return mine;
      },
      grow: (n) => {
        if (released) return undefined;
        if (mine + n > l.maxBodyBytes) return { reason: 'body-too-large', status: 413, message: `request body over the limit of ${l.maxBodyBytes} bytes` };
        const r = this.checkBytes(key, u, n, mine);
        if (r !== undefined) return r;
        add(n);
        return undefined;
      },
      hold: () => {
        if (released || holding) return undefined;
        const r = this.checkHeld(key, u);
        if (r !== undefined) return r;
        holding = true;
        u.held++;
        this.held++;
        return undefined;
      },
      unhold: () => {
        if (!holding) return;
        holding = false;
        u.held--;
        this.held--;
      },
      release: () => {
        if (released) return;
        ticket.unhold();
        released = true;
        u.bytes -= mine;
        this.bytes -= mine;
        mine = 0;
        const left = (this.users.get(u) ?? 1) - 1;
        if (left === 0) {
          this.users.delete(u);
          this.usage.delete(key);
        } else this.users.set(u, left);
      },
    };
    return ticket;
  }

  private readonly users = new Map<Usage, number>();

  /** `own`: bytes this request already counts (they are the service's, but not "something else it holds"). */
  private checkBytes(key: string, u: Usage, n: number, own = 0): Refusal | undefined {
    const l = this.limits;
    if (this.bytes + n > l.maxHeldBytes) return { reason: 'activator-full', status: 503, message: `the activator buffers ${this.bytes} of ${l.maxHeldBytes} body bytes: no room for ${n} more` };
    const share = Math.floor(l.maxHeldBytes * l.serviceShare);
    if (u.bytes + n > share) return { reason: 'service-share', status: 429, message: `${key} already buffers ${u.bytes} body bytes, its share is ${share}` };
    // The reserve is for services with nothing else buffered: their first request must get in.
    if (u.bytes - own > 0 && this.bytes + n > Math.floor(l.maxHeldBytes * (1 - l.reserve)))
      return { reason: 'service-share', status: 429, message: `${key} already buffers ${u.bytes} body bytes; the last ${Math.round(l.reserve * 100)}% of the activator's budget is kept for services that hold nothing` };
    return undefined;
  }

  private checkHeld(key: string, u: Usage): Refusal | undefined {
    const l = this.limits;
    if (this.held + 1 > l.maxHeldRequests) return { reason: 'held-requests', status: 503, message: `the activator holds ${this.held} requests, its limit` };
    const share = Math.min(l.maxHeldPerService, Math.max(1, Math.floor(l.maxHeldRequests * l.serviceShare)));
    if (u.held + 1 > share) return { reason: 'service-held-requests', status: 429, message: `${share} requests already wait for a replica of ${key}` };
    if (u.held > 0 && this.held + 1 > Math.floor(l.maxHeldRequests * (1 - l.reserve)))
      return { reason: 'service-held-requests', status: 429, message: `${key} already has ${u.held} requests waiting; the last ${Math.round(l.reserve * 100)}% of the activator's held requests are kept for services that hold nothing` };
    return undefined;
  }
}
