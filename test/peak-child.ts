// A process that holds 192 MiB, frees it, then runs a step, for runner-measure.test.ts: prints
// as JSON the step's peak and the process's peak (src/runner/measure.ts), in MB.
//   node dist/test/peak-child.js
import { measureStep, processPeakRssMb } from '../src/runner/measure.js';
import { collectGarbage } from '../src/warehouse/executor.js';

// one buffer past glibc's mmap threshold, written so that its pages are resident; freed, it is unmapped
const hold = () => void Buffer.allocUnsafeSlow(192 * 2 ** 20).fill(7);
hold();
collectGarbage();
await new Promise((resolve) => setTimeout(resolve, 100));
const ended = measureStep();
const step = ended();
process.stdout.write(`${JSON.stringify({ step: step.peakRssMb, process: processPeakRssMb() })}\n`);
