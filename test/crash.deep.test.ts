// The whole crash suite (test/crash-support.ts): every named fault point of each kind of
// warehouse, and EFSYNC_CRASH_KILLS kills at random moments (10 unless set; run 50 locally).
import { describeCrashes } from './crash-support.js';

describeCrashes({ points: (all) => all, randomKills: Number(process.env.EFSYNC_CRASH_KILLS ?? 10) });
