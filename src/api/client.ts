// The typed client for the whole service interface (Platform API v2), on an undici keep-alive pool.
//
// Every call: one request per attempt, the body read as text, JSON.parse once, validated once with
// the zod schema of schemas.ts (instants become epoch ms). Every failure is a ServiceError.
//
// Retry policy (docs/client.md explains it for users):
// - GET and PUT are idempotent: retried on 429, 500, 502, 503, 504, connection errors, timeouts and
//   bodies that are not JSON at all (a body cut off by the network). Update Model is a PUT that sets
//   absolute values: after a success the model already holds the priority, so a repeat finds no
//   collision and changes nothing, whichever priority_conflict_resolution was asked for.
// - DELETE (Delete Site, Delete Site Actuals, Delete Site Capacity) is idempotent: deleting what
//   is already gone leaves the same state, so it is retried like GET and PUT.
// - Upload Site Capacity and Upload Site Actuals (POST) merge their points into the site's series
//   (a point replaces the one at its valid time, the others stay). Merging the same points again
//   leaves the same series: idempotent in effect, so retried exactly like GET and PUT; not
//   retrying would leave a change unapplied after a transient fault.
// - Train Site Models (POST) starts a training: a repeat after the service acted would start
//   another, so it is retried like Create Site, only where the service cannot have acted.
// - Create Site (POST) is not idempotent: a repeat after the service acted would create a second
//   site. It is retried only when the service cannot have acted on it: 429 (rejected before any
//   work), a refused connection or a connect timeout (the request never left this machine).
// - Schema violations of a well-formed JSON body ('malformed') are never retried: the service would
//   answer the same again.
// - Backoff: exponential with full jitter, random(0, min(maxDelay, baseDelay * 2^retry)); a
//   Retry-After (seconds or an HTTP date) replaces it when present, unless it is longer than
//   retryAfterMax: then the call fails at once with a clear error rather than sleeping for it.
// - 429 is the account's quota, not the request's: it pauses the whole client and halves the
//   requests in flight (pacing.ts), and a call repeats it up to `throttle.attempts` times (the v1
//   SDK's 10), apart from the `retries.attempts` of the other failures.
// - 401 and 403 mean the key itself is refused (the interface answers 404 for ids of another
//   account): the first one fails that call and every call in flight, queued or to come of this
//   client with one KeyRejectedError, so a run stops at once instead of failing site by site.
// - A service gone stops the client the same way (ServiceUnreachableError, breaker.ts): when for
//   `unreachableAfter` every request failed for want of the service (no connection, no answer in
//   time, a gateway's 502-504) and none was answered.
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import type { Dispatcher } from 'undici';
import { z } from 'zod';
import type { Logger } from 'pino';
import { formatExactInstant, formatInstant } from '../time.js';
import { BodyIssue, readActualsSeries, readForecastSeries, readModelOutput } from './columns.js';
import { Breaker } from './breaker.js';
import {
  type ClientStoppedError,
  KeyRejectedError,
  ServiceError,
  type ServiceErrorDetails,
  type ServiceErrorKind,
  ServiceUnreachableError,
  seconds,
} from './errors.js';
import {
  DEFAULT_THROTTLE,
  Pacer,
  type PacingStats,
  type RateLimit,
  type Slot,
  type ThrottleOptions,
} from './pacing.js';
import {
  Acknowledgement,
  ActualTypes,
  CapacityTimeline,
  CreateSiteResponse,
  ErrorBody,
  FastApiErrorBody,
  ForecastUpdates,
  type ForecastUpdateList,
  ModelInput,
  ModelItem,
  SiteResponse,
  type ActualsSeries,
  type ActualsUpload,
  type CapacityFreq,
  type CapacityUpload,
  type ErrorItem,
  type ForecastSeries,
  type ModelOutput,
  type SiteRequest,
  type TrainSiteModelsBody,
  type UpdateModelBody,
} from './schemas.js';

export interface ServiceClientOptions {
  /** e.g. `https://api.rebase.energy`; paths are `/platform/v2/...` below it. */
  baseUrl: string;
  apiKey: string;
  /** Keep-alive connections in the pool (default 16). */
  connections?: number;
  /** Milliseconds: connect (TCP/TLS), headers (request sent → headers), body (idle between chunks). */
  timeouts?: Partial<Timeouts>;
  retries?: Partial<RetryOptions>;
  /** At most this many requests per window, shared by every call of the client (null or absent: no limit). */
  rateLimit?: RateLimit | null;
  /** What a 429 does: how often a call repeats it, and the pause of the whole client (pacing.ts). */
  throttle?: Partial<ThrottleOptions>;
  /** Wire name of the Model Output parameter that takes `disabled`/`auto` (default `fill`). */
  outputFillParam?: string;
  /**
   * Milliseconds of requests all failing for want of the service, none answered, after which the
   * client stops (default 2 minutes; null: never).
   */
  unreachableAfter?: number | null;
  log?: Logger;
  /** Aborts every call of this client (shutdown); each call may add its own signal too. */
  signal?: AbortSignal;
  /** Told of every request and retry (the runner's metrics), by route template, never the path. */
  observer?: RequestObserver;
}

/** What the client tells an observer; `endpoint` is `GET /platform/v2/sites/{site_id}/forecast`, status null without an answer. */
export interface RequestObserver {
  request(endpoint: string, status: number | null, seconds: number): void;
  retry(endpoint: string, status: number | null): void;
}

export interface Timeouts {
  connect: number;
  headers: number;
  body: number;
}

export interface RetryOptions {
  /** Retries after the first try (0: never retry). */
  attempts: number;
  baseDelay: number;
  maxDelay: number;
  /** The longest Retry-After honoured; a longer one fails the call at once. */
  retryAfterMax: number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface ListModelsOptions extends CallOptions {
  modelType?: 'ai' | 'physical';
  /** Extra fields, sent comma-separated: `['serving_active']`. */
  extra?: string[];
}

export interface ForecastOptions extends CallOptions {
  /** Epoch ms; the service defaults to 00:00 UTC today. */
  start?: number;
  end?: number;
  /** The forecast as it was known at this instant (epoch ms). */
  asOf?: number;
  tz?: string;
  modelId?: string;
  /** Values divided by capacity. */
  normalized?: boolean;
}

export interface ActualsOptions extends CallOptions {
  start: number;
  end: number;
  tz?: string;
  /** Default on the service: `power`. */
  type?: string;
}

/** A range of valid times, both ends included (epoch ms), for the deletes. */
export interface RangeOptions extends CallOptions {
  start: number;
  end: number;
  tz?: string;
}

export interface DeleteActualsOptions extends RangeOptions {
  /** Default on the service: `power`. */
  type?: string;
}

export interface CapacityOptions extends RangeOptions {
  /** The sampling step; the service's default is `1h`. */
  freq?: CapacityFreq;
}

export interface ModelOutputOptions extends CallOptions {
  start?: number;
  end?: number;
  asOf?: number;
  tz?: string;
  outputType?: 'forecast' | 'clearsky';
  fill?: 'disabled' | 'auto';
}

export const DEFAULT_TIMEOUTS: Timeouts = { connect: 10_000, headers: 30_000, body: 60_000 };
export const DEFAULT_RETRIES: RetryOptions = { attempts: 5, baseDelay: 250, maxDelay: 20_000, retryAfterMax: 60_000 };
export const DEFAULT_UNREACHABLE_AFTER = 120_000;

/**
 * A list answer read item by item: an array of the items that parsed, carrying the ones that
 * did not in `rejected`, each with why (so callers that only want the good items use it as is).
 */
export type Listing<T> = T[] & { rejected: RejectedItem[] };

/** One item of a list answer that is malformed: it fails alone, the others are used. */
export interface RejectedItem {
  /** Its position in the list. */
  index: number;
  /** Its `site_id`, else `id`, when readable. */
  id: string | null;
  /** Where in the item, e.g. `latitude` or `state[0]`. */
  fieldPath: string;
  reason: string;
}

/** The list itself must be an array; its items are checked one by one (see `listing`). */
const AnyList = z.array(z.unknown());

/** Which failures a call may repeat (see the policy at the top of this file). */
type RetryPolicy = 'idempotent' | 'unsent-only';

type Method = 'GET' | 'PUT' | 'POST' | 'DELETE';

/**
 * How a body is checked: a zod schema, or a hand-written reader that throws a BodyIssue
 * (columns.ts: the series bodies, the bulk of what a sync reads).
 */
type Schema = z.ZodType | ((json: unknown) => unknown);

/** What a call returns: the schema's output, or the reader's. */
type Parsed<S extends Schema> = S extends z.ZodType ? z.output<S> : S extends (json: unknown) => infer T ? T : never;

interface Call<S extends Schema> {
  method: Method;
  /** The interface's path template, e.g. `/platform/v2/sites/{site_id}/forecast`. */
  template: string;
  /** The concrete path with ids and query string. */
  path: string;
  schema: S;
  body?: unknown;
  siteId?: string;
  modelId?: string;
  policy: RetryPolicy;
  signal?: AbortSignal;
}

/** Transport error codes meaning the request never reached the service. */
const UNSENT_CODES = new Set(['ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT', 'ENOTFOUND', 'EAI_AGAIN']);
const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);
const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);
/** A gateway's answers for a service behind it that is down or does not answer. */
const GATEWAY_STATUS = new Set([502, 503, 504]);
/** Failures of our own making that another attempt cannot cure: a bad argument, a closed client. */
const FINAL_CODES = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_CLOSED', 'UND_ERR_DESTROYED']);

export class ServiceClient {
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly apiKey: string;
  private readonly timeouts: Timeouts;
  private readonly retries: RetryOptions;
  private readonly fillParam: string;
  private readonly log?: Logger;
  private readonly observer?: RequestObserver;
  /** Aborted by the caller's signal (shutdown) or by a refused key; every call follows it. */
  private readonly stopper = new AbortController();
  private readonly signal: AbortSignal;
  private readonly throttle: ThrottleOptions;
  private readonly pacer: Pacer;
  /** Stops following the caller's signal (at close: a process-wide signal outlives many clients). */
  private readonly unfollow: () => void;
  /** What stopped the client (the key refused, the service gone): every later call fails with it. */
  private stopReason?: ClientStoppedError;
  private readonly breaker: Breaker;
  private readonly readHeaders: Record<string, string>;
  private readonly writeHeaders: Record<string, string>;
  private closing?: Promise<void>;

  constructor(options: ServiceClientOptions) {
    if (!options.apiKey) throw new Error('ServiceClient: an API key is required');
    const url = new URL(options.baseUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
    this.retries = { ...DEFAULT_RETRIES, ...options.retries };
    this.fillParam = options.outputFillParam ?? 'fill';
    this.log = options.log;
    this.observer = options.observer;
    setMaxListeners(0, this.stopper.signal);
    this.unfollow = options.signal ? follow(options.signal, this.stopper) : () => undefined;
    this.signal = this.stopper.signal;
    this.throttle = { ...DEFAULT_THROTTLE, ...options.throttle };
    const connections = options.connections ?? 16;
    this.pacer = new Pacer(connections, options.rateLimit ?? null, this.throttle);
    // Failures further apart than one attempt's longest failure and its longest wait after it are
    // not one stretch of silence.
    const after = options.unreachableAfter === undefined ? DEFAULT_UNREACHABLE_AFTER : options.unreachableAfter;
    const gap = this.timeouts.connect + this.timeouts.headers + this.retries.maxDelay;
    this.breaker = new Breaker(after, Math.max(after ?? 0, gap));
    this.pool = new Pool(url.origin, {
      connections,
      connectTimeout: this.timeouts.connect,
      headersTimeout: this.timeouts.headers,
      bodyTimeout: this.timeouts.body,
    });
    this.readHeaders = { authorization: this.apiKey, accept: 'application/json' };
    this.writeHeaders = { ...this.readHeaders, 'content-type': 'application/json' };
  }

  // ------------------------------------------------------------------ sites

  /** The account's sites; a malformed site is rejected alone (`rejected`), the others are returned. */
  async listSites(options: CallOptions = {}): Promise<Listing<SiteResponse>> {
    const items = await this.call({
      method: 'GET',
      template: '/platform/v2/sites',
      path: '/platform/v2/sites',
      schema: AnyList,
      policy: 'idempotent',
      signal: options.signal,
    });
    return listing(items, SiteResponse);
  }

  async createSite(body: SiteRequest, options: CallOptions = {}): Promise<{ site_id: string }> {
    return this.call({
      method: 'POST',
      template: '/platform/v2/sites',
      path: '/platform/v2/sites',
      schema: CreateSiteResponse,
      body,
      policy: 'unsent-only',
      signal: options.signal,
    });
  }

  async getSite(siteId: string, options: CallOptions = {}): Promise<SiteResponse> {
    return this.call({
      method: 'GET',
      template: '/platform/v2/sites/{site_id}',
      path: sitePath(siteId, ''),
      schema: SiteResponse,
      siteId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  /** Answers `{"message": …}` (guide); read the site back with getSite when needed. */
  async updateSite(siteId: string, body: SiteRequest, options: CallOptions = {}): Promise<Acknowledgement> {
    return this.call({
      method: 'PUT',
      template: '/platform/v2/sites/{site_id}',
      path: sitePath(siteId, ''),
      schema: Acknowledgement,
      body,
      siteId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  async deleteSite(siteId: string, options: CallOptions = {}): Promise<Acknowledgement> {
    return this.call({
      method: 'DELETE',
      template: '/platform/v2/sites/{site_id}',
      path: sitePath(siteId, ''),
      schema: Acknowledgement,
      siteId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  /** The site's models; a malformed model is rejected alone (`rejected`), the others are returned. */
  async listSiteModels(siteId: string, options: ListModelsOptions = {}): Promise<Listing<ModelItem>> {
    const query = queryString([
      ['model_type', options.modelType],
      ['extra', options.extra && options.extra.length > 0 ? options.extra.join(',') : undefined],
    ]);
    const items = await this.call({
      method: 'GET',
      template: '/platform/v2/sites/{site_id}/models',
      path: sitePath(siteId, '/models') + query,
      schema: AnyList,
      siteId,
      policy: 'idempotent',
      signal: options.signal,
    });
    return listing(items, ModelItem);
  }

  async getSiteForecast(siteId: string, options: ForecastOptions = {}): Promise<ForecastSeries> {
    const query = queryString([
      ['start_date', instantParam('start', options.start)],
      ['end_date', instantParam('end', options.end)],
      ['tz', options.tz],
      ['as_of', instantParam('asOf', options.asOf, true)],
      ['model_id', options.modelId],
      ['return_normalized', options.normalized === undefined ? undefined : String(options.normalized)],
    ]);
    return this.call({
      method: 'GET',
      template: '/platform/v2/sites/{site_id}/forecast',
      path: sitePath(siteId, '/forecast') + query,
      schema: readForecastSeries,
      siteId,
      modelId: options.modelId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  async getSiteActuals(siteId: string, options: ActualsOptions): Promise<ActualsSeries> {
    const query = queryString([
      ['start_date', instantParam('start', options.start)],
      ['end_date', instantParam('end', options.end)],
      ['tz', options.tz],
      ['type', options.type],
    ]);
    return this.call({
      method: 'GET',
      template: '/platform/v2/sites/{site_id}/actual',
      path: sitePath(siteId, '/actual') + query,
      schema: readActualsSeries,
      siteId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  /** The issue times of the site's forecast vintages (epoch ms), as the service lists them. */
  async getSiteForecastUpdates(siteId: string, options: CallOptions = {}): Promise<ForecastUpdateList> {
    return this.call({
      method: 'GET',
      template: '/platform/v2/sites/{site_id}/forecast/updates',
      path: sitePath(siteId, '/forecast/updates'),
      schema: ForecastUpdates,
      siteId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  /** Merges the points into the site's series of `body.type` (default power). */
  async uploadSiteActuals(siteId: string, body: ActualsUpload, options: CallOptions = {}): Promise<Acknowledgement> {
    return this.call({
      method: 'POST',
      template: '/platform/v2/sites/{site_id}/actual',
      path: sitePath(siteId, '/actual'),
      // A merge: sending the same points again leaves the same series, so retried like a PUT.
      schema: Acknowledgement,
      body,
      siteId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  async deleteSiteActuals(siteId: string, options: DeleteActualsOptions): Promise<Acknowledgement> {
    return this.call({
      method: 'DELETE',
      template: '/platform/v2/sites/{site_id}/actual',
      path: sitePath(siteId, '/actual') + rangeQuery(options),
      schema: Acknowledgement,
      siteId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  /** The series types the site holds (power and any uploaded with another `type`), with their spans. */
  async getSiteActualTypes(siteId: string, options: CallOptions = {}): Promise<ActualTypes> {
    return this.call({
      method: 'GET',
      template: '/platform/v2/sites/{site_id}/actual/types',
      path: sitePath(siteId, '/actual/types'),
      schema: ActualTypes,
      siteId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  /** The capacity in force over [start, end], sampled every `freq`, oldest first (not the uploaded points). */
  async getSiteCapacity(siteId: string, options: CapacityOptions): Promise<CapacityTimeline> {
    const query = queryString([
      ['freq', options.freq],
      ['start_date', instantParam('start', options.start)],
      ['end_date', instantParam('end', options.end)],
      ['tz', options.tz],
    ]);
    return this.call({
      method: 'GET',
      template: '/platform/v2/sites/{site_id}/capacity',
      path: sitePath(siteId, '/capacity') + query,
      schema: CapacityTimeline,
      siteId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  /** Merges the points into the site's capacity timeline (a point replaces the one at its valid time). */
  async uploadSiteCapacity(siteId: string, body: CapacityUpload, options: CallOptions = {}): Promise<Acknowledgement> {
    return this.call({
      method: 'POST',
      template: '/platform/v2/sites/{site_id}/capacity',
      path: sitePath(siteId, '/capacity'),
      // A merge: sending the same points again leaves the same timeline, so retried like a PUT.
      schema: Acknowledgement,
      body,
      siteId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  /** Deletes the capacity points with start <= valid_time <= end. */
  async deleteSiteCapacity(siteId: string, options: RangeOptions): Promise<Acknowledgement> {
    return this.call({
      method: 'DELETE',
      template: '/platform/v2/sites/{site_id}/capacity',
      path: sitePath(siteId, '/capacity') + rangeQuery(options),
      schema: Acknowledgement,
      siteId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  /** Starts the training of the models of `body.site_ids`. Not idempotent: retried only when unsent. */
  async trainSiteModels(body: TrainSiteModelsBody, options: CallOptions = {}): Promise<Acknowledgement> {
    return this.call({
      method: 'POST',
      template: '/platform/v2/sites/models/train',
      path: '/platform/v2/sites/models/train',
      schema: Acknowledgement,
      body,
      policy: 'unsent-only',
      signal: options.signal,
    });
  }

  // ------------------------------------------------------------------ models

  /** The success body is not documented (any JSON); list the site's models to see the result. */
  async updateModel(modelId: string, body: UpdateModelBody, options: CallOptions = {}): Promise<Acknowledgement> {
    return this.call({
      method: 'PUT',
      template: '/platform/v2/models/{model_id}',
      path: modelPath(modelId, ''),
      schema: Acknowledgement,
      body,
      modelId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  async getModelOutput(modelId: string, options: ModelOutputOptions = {}): Promise<ModelOutput> {
    const query = queryString([
      ['start_date', instantParam('start', options.start)],
      ['end_date', instantParam('end', options.end)],
      ['tz', options.tz],
      ['as_of', instantParam('asOf', options.asOf, true)],
      ['output_type', options.outputType],
      [this.fillParam, options.fill],
    ]);
    return this.call({
      method: 'GET',
      template: '/platform/v2/models/{model_id}/output',
      path: modelPath(modelId, '/output') + query,
      schema: readModelOutput,
      modelId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  /** The model's latest input data: `dataframe` and `metadata`, as the service sends them. */
  async getModelInput(modelId: string, options: CallOptions = {}): Promise<ModelInput> {
    return this.call({
      method: 'GET',
      template: '/platform/v2/models/{model_id}/input',
      path: modelPath(modelId, '/input'),
      schema: ModelInput,
      modelId,
      policy: 'idempotent',
      signal: options.signal,
    });
  }

  /** Requests made, 429s met and pauses taken so far by this client. */
  pacing(): PacingStats {
    return this.pacer.stats();
  }

  /** What stopped this client (the API key refused, the service gone), if anything did. */
  stopped(): ClientStoppedError | undefined {
    return this.stopReason;
  }

  /** Closes the keep-alive connections once the requests in flight are done; a second close does nothing. */
  async close(): Promise<void> {
    this.unfollow();
    this.closing ??= this.pool.close();
    await this.closing;
  }

  // ------------------------------------------------------------------ the request loop

  private async call<S extends Schema>(call: Call<S>): Promise<Parsed<S>> {
    const linked = linkSignals(this.signal, call.signal && listenable(call.signal));
    try {
      return await this.withRetries(call, linked.signal);
    } finally {
      linked.dispose();
    }
  }

  private async withRetries<S extends Schema>(call: Call<S>, signal: AbortSignal | undefined): Promise<Parsed<S>> {
    let throttled = 0;
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw this.abortedError(call, attempt - 1);
      try {
        return await this.attempt(call, signal, attempt);
      } catch (error) {
        if (!(error instanceof ServiceError)) throw error;
        if (!mayRetry(call.policy, error)) throw error;
        if (error.status === 429) throttled += 1;
        const retries = error.status === 429 ? throttled : attempt - throttled;
        if (retries > (error.status === 429 ? this.throttle.attempts : this.retries.attempts)) throw error;
        // A 429 waits in the pacer, with every other call of the client; the others wait here.
        const delay =
          error.status === 429 ? this.throttleDelay(call, error, attempt) : this.retryDelay(call, error, attempt);
        this.log?.warn(
          {
            endpoint: `${call.method} ${call.template}`,
            path: call.path,
            attempt,
            status: error.status,
            code: error.code,
            delayMs: Math.round(delay),
            reason: error.detail,
          },
          'service request failed, retrying',
        );
        this.observer?.retry(`${call.method} ${call.template}`, error.status);
        if (error.status !== 429) await this.pause(call, delay, signal, attempt);
      }
    }
  }

  /** One request and its validation; every failure becomes a ServiceError. */
  private async attempt<S extends Schema>(
    call: Call<S>,
    signal: AbortSignal | undefined,
    attempt: number,
  ): Promise<Parsed<S>> {
    const slot = await this.admit(call, signal, attempt);
    const started = performance.now();
    let status: number | undefined;
    let text: string;
    let response: Dispatcher.ResponseData;
    try {
      const answer = this.pool.request({
        method: call.method,
        path: this.basePath + call.path,
        headers: call.body === undefined ? this.readHeaders : this.writeHeaders,
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
        signal,
      });
      slot.sent();
      response = await answer;
      status = response.statusCode;
      if (!GATEWAY_STATUS.has(status)) this.breaker.answered();
      text = await response.body.text();
    } catch (cause) {
      slot.done();
      this.logRequest(call, attempt, status ?? null, started, errorCode(cause));
      const error = this.transportError(call, cause, signal, attempt, status);
      // Headers came: the service is there, whatever cut the body off. A closed client is ours.
      throw status === undefined && error.kind !== 'aborted' && error.retryable ? this.absent(error) : error;
    }
    this.logRequest(call, attempt, status, started);
    if (status < 200 || status > 299) {
      const failure = this.httpError(call, status, response.headers, text, attempt);
      const error = GATEWAY_STATUS.has(status) ? this.absent(failure) : failure;
      // The pause honours a Retry-After up to retryAfterMax, as a call does (a longer one fails it).
      if (status === 429)
        slot.throttled(error.retryAfterMs === null ? null : Math.min(error.retryAfterMs, this.retries.retryAfterMax));
      else slot.done();
      throw error;
    }
    slot.ok();
    return this.decode(call, status, text, attempt);
  }

  /** A place among the requests the pacer lets go (rate, concurrency, a pause after a 429). */
  private async admit(call: Call<Schema>, signal: AbortSignal | undefined, attempt: number): Promise<Slot> {
    try {
      return await this.pacer.admit(signal);
    } catch {
      throw this.abortedError(call, attempt - 1);
    }
  }

  private decode<S extends Schema>(call: Call<S>, status: number, text: string, attempt: number): Parsed<S> {
    let json: unknown;
    try {
      // A write answered with no body at all (204, or an empty 200) succeeded with nothing to say.
      json = text.trim() === '' && call.method !== 'GET' ? {} : JSON.parse(text);
    } catch (cause) {
      // Not JSON at all: most likely cut off or rewritten on the way, so worth another attempt.
      throw this.error(call, {
        kind: 'malformed',
        status,
        attempts: attempt,
        retryable: true,
        cause,
        detail: `malformed response: not JSON (${text.length} bytes: ${(cause as Error).message})`,
      });
    }
    let issue: BodyIssue;
    try {
      return check(call.schema, json);
    } catch (error) {
      if (!(error instanceof BodyIssue)) throw error;
      issue = error;
    }
    const fieldPath = formatPath(issue.path);
    throw this.error(call, {
      kind: 'malformed',
      status,
      attempts: attempt,
      retryable: false,
      fieldPath,
      detail: `malformed response: ${fieldPath}: ${issue.message}`,
    });
  }

  private httpError(
    call: Call<Schema>,
    status: number,
    headers: Dispatcher.ResponseData['headers'],
    text: string,
    attempt: number,
  ): ServiceError {
    const errors = errorItems(text);
    const summary =
      errors.length > 0
        ? errors
            .slice(0, 3)
            .map((e) => `${e.field}: ${e.message}`)
            .join('; ') + (errors.length > 3 ? ` (+${errors.length - 3} more)` : '')
        : oneLine(text, 160);
    const details = {
      kind: 'http' as const,
      status,
      errors,
      attempts: attempt,
      retryable: RETRYABLE_STATUS.has(status),
      retryAfterMs: retryAfterMs(headers['retry-after']),
      detail: summary ? `HTTP ${status}: ${summary}` : `HTTP ${status}`,
    };
    if (status === 401 || status === 403) return this.keyRefused(call, details, summary);
    return this.error(call, details);
  }

  /** The first refusal stops the client. */
  private keyRefused(
    call: Call<Schema>,
    details: Omit<ServiceErrorDetails, 'endpoint'>,
    summary: string,
  ): ClientStoppedError {
    if (this.stopReason) return this.stopReason;
    const plain = this.error(call, details);
    const refused = new KeyRejectedError(
      {
        ...details,
        endpoint: plain.endpoint,
        siteId: call.siteId,
        modelId: call.modelId,
        detail: plain.detail,
        errors: plain.errors,
      },
      this.scrub(summary),
    );
    return this.stop(refused);
  }

  /** A failure for want of the service: the error that stops the client once they have lasted too long, else itself. */
  private absent(error: ServiceError): ServiceError {
    if (this.stopReason) return this.stopReason;
    const lasted = this.breaker.failed();
    if (lasted === null) return error;
    const gone = new ServiceUnreachableError(
      {
        kind: error.kind,
        endpoint: error.endpoint,
        detail: error.detail,
        status: error.status,
        siteId: error.siteId,
        modelId: error.modelId,
        attempts: error.attempts,
        code: error.code,
      },
      lasted,
    );
    return this.stop(gone);
  }

  /** Every call in flight, queued or to come of this client fails with `reason` from now on. */
  private stop(reason: ClientStoppedError): ClientStoppedError {
    this.stopReason = reason;
    this.log?.error({ endpoint: reason.endpoint, status: reason.status }, reason.message);
    this.stopper.abort(reason);
    return reason;
  }

  /** A failure below HTTP; `status` is known when the headers came and the body did not (cut off, or too slow). */
  private transportError(
    call: Call<Schema>,
    cause: unknown,
    signal: AbortSignal | undefined,
    attempt: number,
    status: number | undefined,
  ): ServiceError {
    if (signal?.aborted) return this.abortedError(call, attempt);
    const code = errorCode(cause);
    const kind: ServiceErrorKind = code !== undefined && TIMEOUT_CODES.has(code) ? 'timeout' : 'network';
    const message = cause instanceof Error ? cause.message : String(cause);
    const what =
      status === undefined
        ? kind === 'timeout'
          ? 'timed out'
          : 'connection failed'
        : kind === 'timeout'
          ? `response body stalled after HTTP ${status}`
          : `response body cut off after HTTP ${status}`;
    return this.error(call, {
      kind,
      code,
      attempts: attempt,
      cause,
      retryable: code === undefined || !FINAL_CODES.has(code),
      detail: `${what}: ${message}${code ? ` (${code})` : ''}`,
    });
  }

  private abortedError(call: Call<Schema>, attempt: number): ServiceError {
    if (this.stopReason) return this.stopReason;
    return this.error(call, { kind: 'aborted', attempts: attempt, detail: 'aborted' });
  }

  /** Builds the error with the call's endpoint and ids, the key scrubbed from anything the service said. */
  private error(call: Call<Schema>, details: Omit<ServiceErrorDetails, 'endpoint'>): ServiceError {
    return new ServiceError({
      ...details,
      endpoint: `${call.method} ${call.template}`,
      siteId: call.siteId,
      modelId: call.modelId,
      detail: this.scrub(details.detail),
      errors: details.errors?.map((e) => ({ field: this.scrub(e.field), message: this.scrub(e.message) })),
    });
  }

  private scrub(text: string): string {
    return text.includes(this.apiKey) ? text.split(this.apiKey).join('[redacted]') : text;
  }

  /** Retry-After when the service sent one (fails fast beyond retryAfterMax), else backoff with full jitter. */
  private retryDelay(call: Call<Schema>, error: ServiceError, attempt: number): number {
    if (error.retryAfterMs !== null) {
      if (error.retryAfterMs > this.retries.retryAfterMax) {
        throw this.error(call, {
          kind: error.kind,
          status: error.status,
          errors: error.errors,
          attempts: attempt,
          retryable: true,
          retryAfterMs: error.retryAfterMs,
          detail:
            `${error.detail}; the service asks to retry after ${seconds(error.retryAfterMs)}, ` +
            `longer than the ${seconds(this.retries.retryAfterMax)} allowed (service.retries.retry_after_max): giving up`,
        });
      }
      return error.retryAfterMs;
    }
    const ceiling = Math.min(this.retries.maxDelay, this.retries.baseDelay * 2 ** (attempt - 1));
    return Math.random() * ceiling;
  }

  /** How long the pacer holds the client after this 429 (for the log); a Retry-After beyond retryAfterMax fails at once. */
  private throttleDelay(call: Call<Schema>, error: ServiceError, attempt: number): number {
    if (error.retryAfterMs !== null) return this.retryDelay(call, error, attempt);
    return Math.max(0, this.pacer.pausedFor());
  }

  private async pause(
    call: Call<Schema>,
    delay: number,
    signal: AbortSignal | undefined,
    attempt: number,
  ): Promise<void> {
    try {
      await sleep(delay, undefined, { signal });
    } catch {
      throw this.abortedError(call, attempt);
    }
  }

  private logRequest(call: Call<Schema>, attempt: number, status: number | null, started: number, code?: string): void {
    this.observer?.request(`${call.method} ${call.template}`, status, (performance.now() - started) / 1000);
    if (!this.log?.isLevelEnabled('debug')) return;
    this.log.debug(
      { method: call.method, path: call.path, status, ms: Math.round(performance.now() - started), attempt, code },
      'service request',
    );
  }
}

function mayRetry(policy: RetryPolicy, error: ServiceError): boolean {
  if (!error.retryable) return false;
  if (policy === 'idempotent') return true;
  return error.status === 429 || (error.code !== undefined && UNSENT_CODES.has(error.code));
}

/** Aborts `controller` when `source` aborts; returns the unsubscribe. */
function follow(source: AbortSignal, controller: AbortController): () => void {
  const abort = () => controller.abort(source.reason);
  if (source.aborted) abort();
  else source.addEventListener('abort', abort, { once: true });
  return () => source.removeEventListener('abort', abort);
}

const followers = new WeakMap<AbortSignal, AbortSignal>();

/**
 * A signal of our own that follows `source`, one per source: every request in flight listens to
 * its signal, and a caller's shutdown signal shared by dozens of concurrent calls would otherwise
 * collect more listeners than Node allows without a leak warning.
 */
function listenable(source: AbortSignal): AbortSignal {
  let signal = followers.get(source);
  if (!signal) {
    const controller = new AbortController();
    setMaxListeners(0, controller.signal);
    follow(source, controller);
    signal = controller.signal;
    followers.set(source, signal);
  }
  return signal;
}

/**
 * One signal for a call from the client's and the call's own. Not AbortSignal.any: its
 * composites stay attached to a long-lived source, and a sync makes tens of thousands of calls.
 */
function linkSignals(
  a: AbortSignal | undefined,
  b: AbortSignal | undefined,
): { signal?: AbortSignal; dispose(): void } {
  if (!a || !b) return { signal: a ?? b, dispose() {} };
  const controller = new AbortController();
  const unfollow = [follow(a, controller), follow(b, controller)];
  return {
    signal: controller.signal,
    dispose: () => {
      for (const stop of unfollow) stop();
    },
  };
}

function sitePath(siteId: string, rest: string): string {
  return `/platform/v2/sites/${encodeURIComponent(siteId)}${rest}`;
}

function modelPath(modelId: string, rest: string): string {
  return `/platform/v2/models/${encodeURIComponent(modelId)}${rest}`;
}

/**
 * An epoch-ms option as wire text; a value that is no instant is a programming error, thrown
 * before sending. `exact`: to the microsecond (an as_of names a vintage by its listed issue time).
 */
function instantParam(name: string, ms: number | undefined, exact = false): string | undefined {
  if (ms === undefined) return undefined;
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15)
    throw new RangeError(`${name}: not an instant in epoch milliseconds: ${ms}`);
  return exact ? formatExactInstant(ms) : formatInstant(ms);
}

/** The query of a delete by range: start_date, end_date, and tz and type when given. */
function rangeQuery(options: DeleteActualsOptions | RangeOptions): string {
  return queryString([
    ['start_date', instantParam('start', options.start)],
    ['end_date', instantParam('end', options.end)],
    ['tz', options.tz],
    ['type', 'type' in options ? options.type : undefined],
  ]);
}

/** `?a=1&b=2` from the pairs that have a value; '' when none has. */
function queryString(pairs: [string, string | undefined][]): string {
  let query = '';
  for (const [name, value] of pairs) {
    if (value === undefined) continue;
    query += `${query ? '&' : '?'}${encodeURIComponent(name)}=${encodeURIComponent(value)}`;
  }
  return query;
}

/** The `errors[]` of an error body (or FastAPI's `detail`), or [] when the body is neither. */
function errorItems(text: string): ErrorItem[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return [];
  }
  const ours = ErrorBody.safeParse(json);
  if (ours.success) return ours.data.errors;
  const fastApi = FastApiErrorBody.safeParse(json);
  return fastApi.success ? fastApi.data.detail : [];
}

/** The body checked by the call's schema or reader; its first problem thrown as a BodyIssue. */
function check<S extends Schema>(schema: S, json: unknown): Parsed<S> {
  if (typeof schema === 'function') return schema(json) as Parsed<S>;
  const parsed = (schema as z.ZodType).safeParse(json);
  if (parsed.success) return parsed.data as Parsed<S>;
  const [first] = parsed.error.issues;
  throw new BodyIssue(
    first.path.map((part) => (typeof part === 'number' ? part : String(part))),
    first.message,
  );
}

/** Each item of a list answer parsed on its own: a malformed item is rejected with its path and reason. */
function listing<S extends z.ZodType>(items: unknown[], schema: S): Listing<z.output<S>> {
  const result: Listing<z.output<S>> = Object.assign([] as z.output<S>[], { rejected: [] as RejectedItem[] });
  items.forEach((item, index) => {
    const parsed = schema.safeParse(item);
    if (parsed.success) {
      result.push(parsed.data);
      return;
    }
    const issue = parsed.error.issues[0];
    result.rejected.push({ index, id: itemId(item), fieldPath: formatPath(issue.path), reason: issue.message });
  });
  return result;
}

function itemId(item: unknown): string | null {
  const fields = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
  const id = fields.site_id ?? fields.id;
  return typeof id === 'string' ? id : null;
}

/** Retry-After as milliseconds from now: delta seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return null;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** `forecast`, `[3].state[0].timestamp_utc`, or `(root)`. */
function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  let text = '';
  for (const part of path) {
    text += typeof part === 'number' ? `[${part}]` : `${text ? '.' : ''}${String(part)}`;
  }
  return text;
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}
