import { describe, expect, it } from 'vitest';
import { monitorArguments } from '../src/index.js';

describe('MONITOR lines', () => {
  it('are read back into the arguments sent, escapes and empty arguments included', () => {
    const line = String.raw`+1795851044.468978 [0 127.0.0.1:55362] "EVALSHA" "3d2c" "2" "k \"q\" \\ x" "" "\xc3\xa9\n"`;
    expect(monitorArguments(line)).toEqual(['EVALSHA', '3d2c', '2', 'k "q" \\ x', '', 'é\n']);
  });

  it('give nothing for a line without arguments', () => {
    expect(monitorArguments('+OK')).toEqual([]);
  });
});
