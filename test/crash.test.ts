// The crash suite's fast sample (test/crash-support.ts): two named fault points of each kind of
// warehouse, drawn from the run's seed, and one kill at a random moment. crash.deep.test.ts kills
// at every point.
import { describeCrashes } from './crash-support.js';
import { sample } from './seed.js';

describeCrashes({ points: (all, label) => sample(all, 2, label), randomKills: 1 });
