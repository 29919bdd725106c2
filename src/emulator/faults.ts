// Injected faults, deterministic for a seed: the n-th request (counted from start) is faulty when
// a hash of (seed, n) falls below the fault rate, and the hash also picks the kind. The n-th data
// response (forecast, output, actuals) is malformed by the same rule with the malformed rate.
import { hashInts, uniform } from './noise.js';

export type FaultKind = 'http500' | 'http503' | 'http429' | 'slow' | 'cut';
export const FAULT_KINDS: FaultKind[] = ['http500', 'http503', 'http429', 'slow', 'cut'];

export type MalformKind = 'unequal' | 'missing';

/** What a test hook sees of a request, to force a fault on one site or model. */
export interface FaultContext {
  method: string;
  path: string;
  siteId?: string;
  modelId?: string;
  /** The request's number since start, from 1. */
  counter: number;
}

export interface FaultSettings {
  faultRate: number;
  malformedRate: number;
  /** Every data response (forecast, actuals, and output of the site's models) of these sites is malformed. */
  malformedSites: Set<string>;
  /** A test's hook: return a kind to force that fault on this request, 'malformed' to break its data. */
  hook?: (context: FaultContext) => FaultKind | 'malformed' | undefined;
}

const FAULT_SALT = 0xfa17;
const MALFORM_SALT = 0xbadda7a;

export class FaultPlan {
  private requests = 0;
  private dataResponses = 0;

  constructor(
    private readonly seed: number,
    readonly settings: FaultSettings,
  ) {}

  /** Counts a request; the transient fault it gets, if any. */
  nextRequest(): { counter: number; fault?: FaultKind } {
    const counter = ++this.requests;
    if (this.settings.faultRate <= 0 || uniform(this.seed, FAULT_SALT, counter) >= this.settings.faultRate)
      return { counter };
    return { counter, fault: FAULT_KINDS[hashInts(this.seed, FAULT_SALT + 1, counter) % FAULT_KINDS.length] };
  }

  /** Counts a data response; how to break it, if it is to be broken. */
  nextDataResponse(forced: boolean): MalformKind | undefined {
    const counter = ++this.dataResponses;
    if (
      !forced &&
      (this.settings.malformedRate <= 0 || uniform(this.seed, MALFORM_SALT, counter) >= this.settings.malformedRate)
    )
      return undefined;
    return hashInts(this.seed, MALFORM_SALT + 1, counter) % 2 === 0 ? 'unequal' : 'missing';
  }
}

/**
 * Breaks a columnar body so that it no longer fits the interface but is still JSON:
 * `unequal` drops the last value of one array (or adds one to an empty array), `missing` deletes a required field.
 */
export function malform(body: Record<string, unknown>, kind: MalformKind): Record<string, unknown> {
  const broken = { ...body };
  if (kind === 'missing') {
    delete broken[broken.model_id !== undefined ? 'as_of' : 'valid_time'];
    return broken;
  }
  const column = ['forecast', 'value'].find((name) => Array.isArray(broken[name])) as string;
  const values = [...(broken[column] as unknown[])];
  if (values.length > 0) values.pop();
  else values.push(0);
  broken[column] = values;
  return broken;
}
