/**
 * What an XID says about the device, from NVIDIA's Xid catalogue
 * (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, "Resolution Bucket" column, and
 * https://docs.nvidia.com/deploy/xid-errors/index.html). Only hardware classes count: application faults
 * (13 graphics engine exception, 31 MMU fault, 43 channel reset, 45 preemptive cleanup) say nothing about the
 * device and are ignored, or every crashing user job would quarantine a GPU.
 */

/** `fatal`: the device has failed (reset or replace); `precursor`: it still runs but a failure is likely soon. */
export type XidClass = 'fatal' | 'precursor';

export interface XidInfo {
  readonly xid: number;
  readonly class: XidClass;
  readonly text: string;
}

const LIST: readonly XidInfo[] = [
  { xid: 48, class: 'fatal', text: 'double-bit ECC error' },
  // 63 on Ampere+ is "row remapping event": a new row is marked and the GPU needs a reset to use it; the
  // memory still works, so the job can checkpoint first (precursor), as 92 (high single-bit ECC rate).
  { xid: 63, class: 'precursor', text: 'ECC page retirement or row remapping recorded (reset needed)' },
  { xid: 64, class: 'fatal', text: 'ECC page retirement or row remapping failure' },
  { xid: 74, class: 'fatal', text: 'NVLink error' },
  { xid: 79, class: 'fatal', text: 'GPU has fallen off the bus' },
  { xid: 92, class: 'precursor', text: 'high single-bit ECC error rate' },
  { xid: 94, class: 'fatal', text: 'contained ECC error' },
  { xid: 95, class: 'fatal', text: 'uncontained ECC error' },
  { xid: 119, class: 'fatal', text: 'GSP RPC timeout' },
  { xid: 120, class: 'fatal', text: 'GSP error' },
  { xid: 140, class: 'fatal', text: 'unrecovered ECC error' },
];

export const XIDS: ReadonlyMap<number, XidInfo> = new Map(LIST.map((x) => [x.xid, x]));

/** The XID's class, or undefined for XIDs that do not speak about the device's health. */
export function xidInfo(xid: number): XidInfo | undefined {
  return XIDS.get(xid);
}
