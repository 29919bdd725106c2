// A step's peak is its own, the process's peak every step's (src/runner/measure.ts), in a child
// process that held 192 MiB before the step.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { builtChild } from './built.js';

describe('peak RSS', () => {
  it("keeps the process's peak from before a step's reset of the kernel's mark", () => {
    const out = JSON.parse(execFileSync(process.execPath, [builtChild('test/peak-child.ts')], { encoding: 'utf8' }));
    // the step began after the buffer was unmapped: its peak is the process without it
    expect(out.process).toBeGreaterThanOrEqual(192);
    expect(out.step).toBeLessThan(out.process - 150);
  });
});
