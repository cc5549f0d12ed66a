import { describe, expect, it } from 'vitest';
import { deviceGpus } from './batch-quarantine.ts';

describe('deviceGpus', () => {
  it('reads node/index and node/i,j; a CPU device or garbage is not a GPU', () => {
    expect(deviceGpus('dgx-h100-000/3')).toEqual({ node: 'dgx-h100-000', gpus: [3] });
    expect(deviceGpus('n/0,1')).toEqual({ node: 'n', gpus: [0, 1] });
    expect(deviceGpus('n/cpu')).toBeUndefined();
    expect(deviceGpus('/3')).toBeUndefined();
    expect(deviceGpus('n/1,x')).toBeUndefined();
  });
});
