import { describe, expect, it } from 'vitest';
import { utf8Text } from './utf8-text.ts';

describe('utf8Text', () => {
  it('reads UTF-8 text, and says where binary data starts', () => {
    expect(utf8Text(Buffer.from('a: café\n'))).toEqual({ text: 'a: café\n' });
    expect(utf8Text(Buffer.from([0x61, 0x62, 0x00, 0x63]))).toEqual({ binaryAt: 2 });
    // Latin-1 "é" alone is not UTF-8.
    expect(utf8Text(Buffer.from([0x61, 0xe9, 0x0a]))).toEqual({ binaryAt: 0 });
  });
});
