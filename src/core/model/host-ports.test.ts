import { describe, expect, it } from 'vitest';
import { portsConflict, usePorts, type UsedPorts } from './host-ports.ts';
import type { HostPort } from './pod.ts';

const p = (port: number, ip = '0.0.0.0', protocol: HostPort['protocol'] = 'TCP'): HostPort => ({ port, ip, protocol });

describe('portsConflict (HostPortInfo.CheckConflict)', () => {
  const used: UsedPorts = new Map();
  usePorts(used, [p(8080, '10.0.0.1'), p(9090)], 1);

  it('0.0.0.0 conflicts with the port on any address; a specific address with itself and 0.0.0.0', () => {
    expect(portsConflict(used, [p(8080)])).toBe(true);
    expect(portsConflict(used, [p(8080, '10.0.0.1')])).toBe(true);
    expect(portsConflict(used, [p(8080, '10.0.0.2')])).toBe(false);
    expect(portsConflict(used, [p(9090, '10.0.0.2')])).toBe(true);
    expect(portsConflict(used, [p(7070)])).toBe(false);
  });

  it('is per protocol', () => {
    expect(portsConflict(used, [p(8080, '0.0.0.0', 'UDP')])).toBe(false);
    expect(portsConflict(used, [p(9090, '10.0.0.1', 'SCTP')])).toBe(false);
  });

  it('frees a port when its last user leaves', () => {
    const u: UsedPorts = new Map();
    usePorts(u, [p(80)], 1);
    usePorts(u, [p(80)], 1);
    usePorts(u, [p(80)], -1);
    expect(portsConflict(u, [p(80, '1.2.3.4')])).toBe(true);
    usePorts(u, [p(80)], -1);
    expect(portsConflict(u, [p(80, '1.2.3.4')])).toBe(false);
    expect(u.size).toBe(0);
  });
});
