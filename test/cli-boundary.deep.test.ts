// Every failing command of test/cli-boundary-support.ts (the fast tier runs a sample of them).
import { describeCommandFailures } from './cli-boundary-support.js';

describeCommandFailures((all) => all);
