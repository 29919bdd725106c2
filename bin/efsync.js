#!/usr/bin/env node
// Runs the TypeScript sources through tsx, so `npx efsync` needs no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
