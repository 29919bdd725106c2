// The emulator's HTTP server (plain node:http, keep-alive): routing, the Authorization check,
// an account's quota and revocation (limits.ts), JSON bodies, injected faults, and the state file. Endpoint logic lives in handlers.ts.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SiteRequest } from '../api/schemas.js';
import { demoSiteRequest } from './demo.js';
import { FaultPlan, malform, type FaultContext, type FaultKind } from './faults.js';
import * as handlers from './handlers.js';
import { AccountLimits, type LimitSettings, type Quota } from './limits.js';
import { errorReply, HttpError, vintageKey, type Context, type EmulatorProfile, type Reply } from './handlers.js';
import { ConflictError, NotFoundError, Store, type IssueTiming, type ModelKind } from './store.js';
import { DAY, parseInstant, startOfUtcDay } from '../time.js';
import { untidyReply, type UntidyKind } from './untidy.js';

export interface EmulatorOptions {
  /** Every key is one account, with its own demo sites. */
  apiKeys: string[];
  /** Demo sites created for every key (default 0). */
  sites?: number;
  seed?: number;
  /** The emulator's clock (epoch ms); default Date.now. Data and vintages depend on it. */
  now?: () => number;
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  faultRate?: number;
  malformedRate?: number;
  /** How long a `slow` fault holds its answer back (ms, default 3000). */
  slowMs?: number;
  /** Sites whose data responses are always malformed (tests). */
  malformedSites?: string[];
  /** A test hook that forces a fault on chosen requests. */
  faultHook?: (context: FaultContext) => FaultKind | 'malformed' | undefined;
  /** Load state from this file at start and save it after every change and on close. */
  statePath?: string;
  /** Days of history before the UTC day of creation (default 14). */
  historyDays?: number;
  /** `rich` (default) or `docs`: exactly the shapes of the service's public pages (see EmulatorProfile). */
  profile?: EmulatorProfile;
  /** At most this many requests per window and key; more are answered 429 without Retry-After. */
  quota?: Quota | null;
  /** Every key is revoked after this many requests: 401 with the error body from then on. */
  revokeAfter?: number | null;
  /** Cron schedules (UTC) replacing the defaults of a kind of model, e.g. `{ ai: '0 * * * *' }` for hourly AI issues. */
  schedules?: Partial<Record<ModelKind, string>>;
  /** Issue times with microseconds, and kinds of model that publish late (store.ts IssueTiming). */
  issueTiming?: IssueTiming;
  /**
   * Vintages that always answer 400, each `<id>@<instant>`: a site id with the as_of of a site
   * forecast read, or a model id with the issue time of the output vintage a read resolves to.
   */
  failingVintages?: string[];
  /** Untidy answers to serve (untidy.ts), none by default. */
  untidy?: UntidyKind[];
}

export interface Emulator {
  url: string;
  port: number;
  store: Store;
  /** Changes fault injection while running (tests learn site ids only after start). */
  setFaults(settings: {
    faultRate?: number;
    malformedRate?: number;
    malformedSites?: string[];
    faultHook?: EmulatorOptions['faultHook'] | null;
    failingVintages?: string[];
  }): void;
  /** Changes the quota and the revocation while running (null turns one off). */
  setLimits(settings: Partial<LimitSettings>): void;
  /** Replaces the untidy switches that are on (untidy.ts). */
  setUntidy(kinds: UntidyKind[]): void;
  /** What was served since start: requests, injected faults by kind, malformed data responses. */
  stats(): EmulatorStats;
  close(): Promise<void>;
}

export interface EmulatorStats {
  requests: number;
  /** Answered 429 by the quota. */
  throttled: number;
  /** Answered 401 because the key was revoked. */
  revoked: number;
  faults: Record<FaultKind, number>;
  malformed: number;
}

const API_PREFIX = '/platform/v2';
const MAX_BODY_BYTES = 10 * 1024 * 1024;

type Handler = (ctx: Context, id: string, query: Record<string, string>, body: unknown) => Reply;

/** The routes: path pattern (`:id` a path parameter) to handlers by method. */
const ROUTES: { pattern: string[]; kind: 'site' | 'model' | 'none'; methods: Record<string, Handler> }[] = [
  {
    pattern: ['sites'],
    kind: 'none',
    methods: { GET: (c) => handlers.listSites(c), POST: (c, _i, _q, b) => handlers.createSite(c, b) },
  },
  // Before sites/:id/models, which it would otherwise match with the site id "models".
  {
    pattern: ['sites', 'models', 'train'],
    kind: 'none',
    methods: { POST: (c, _i, _q, b) => handlers.trainModels(c, b) },
  },
  {
    pattern: ['sites', ':id'],
    kind: 'site',
    methods: {
      GET: (c, i) => handlers.getSite(c, i),
      PUT: (c, i, _q, b) => handlers.updateSite(c, i, b),
      DELETE: (c, i) => handlers.deleteSite(c, i),
    },
  },
  { pattern: ['sites', ':id', 'models'], kind: 'site', methods: { GET: (c, i, q) => handlers.listModels(c, i, q) } },
  {
    pattern: ['sites', ':id', 'forecast'],
    kind: 'site',
    methods: { GET: (c, i, q) => handlers.siteForecast(c, i, q) },
  },
  {
    pattern: ['sites', ':id', 'actual', 'types'],
    kind: 'site',
    methods: { GET: (c, i) => handlers.actualTypes(c, i) },
  },
  {
    pattern: ['sites', ':id', 'forecast', 'updates'],
    kind: 'site',
    methods: { GET: (c, i) => handlers.forecastUpdates(c, i) },
  },
  {
    pattern: ['sites', ':id', 'actual'],
    kind: 'site',
    methods: {
      GET: (c, i, q) => handlers.siteActuals(c, i, q),
      POST: (c, i, _q, b) => handlers.uploadActuals(c, i, b),
      DELETE: (c, i, q) => handlers.deleteActuals(c, i, q),
    },
  },
  {
    pattern: ['sites', ':id', 'capacity'],
    kind: 'site',
    methods: {
      GET: (c, i, q) => handlers.siteCapacity(c, i, q),
      POST: (c, i, _q, b) => handlers.uploadCapacity(c, i, b),
      DELETE: (c, i, q) => handlers.deleteCapacity(c, i, q),
    },
  },
  { pattern: ['models', ':id'], kind: 'model', methods: { PUT: (c, i, _q, b) => handlers.updateModel(c, i, b) } },
  { pattern: ['models', ':id', 'output'], kind: 'model', methods: { GET: (c, i, q) => handlers.modelOutput(c, i, q) } },
  { pattern: ['models', ':id', 'input'], kind: 'model', methods: { GET: (c, i) => handlers.modelInput(c, i) } },
];

function matchRoute(pathname: string) {
  if (!pathname.startsWith(`${API_PREFIX}/`)) return undefined;
  let parts: string[];
  try {
    parts = pathname
      .slice(API_PREFIX.length + 1)
      .split('/')
      .filter((part) => part !== '')
      .map(decodeURIComponent);
  } catch {
    return undefined; // a broken %-escape names no resource
  }
  for (const route of ROUTES) {
    if (route.pattern.length !== parts.length) continue;
    if (route.pattern.every((segment, i) => segment === ':id' || segment === parts[i])) {
      return { route, id: parts[1] ?? '' };
    }
  }
  return undefined;
}

/** Query parameters as an object; a repeated `extra` joins with commas, other repeats keep the last. */
function queryObject(params: URLSearchParams): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [key, value] of params) query[key] = key === 'extra' && query[key] ? `${query[key]},${value}` : value;
  return query;
}

export async function startEmulator(options: EmulatorOptions): Promise<Emulator> {
  const seed = options.seed ?? 1;
  const clock = options.now ?? Date.now;
  const historyDays = options.historyDays ?? 14;
  const profile = options.profile ?? 'rich';
  const slowMs = options.slowMs ?? 3000;
  const store = new Store(seed, options.statePath, options.schedules);
  store.load();
  store.setIssueTiming(options.issueTiming ?? {});
  createDemoSites(store, options.apiKeys, options.sites ?? 0, clock(), historyDays, seed);
  let failingVintages = vintageKeys(options.failingVintages ?? []);
  const accounts = new Map(options.apiKeys.map((key) => [key, Store.accountOf(key)]));
  let untidy = new Set(options.untidy ?? []);
  const faults = new FaultPlan(seed, {
    faultRate: options.faultRate ?? 0,
    malformedRate: options.malformedRate ?? 0,
    malformedSites: new Set(options.malformedSites ?? []),
    hook: options.faultHook,
  });
  const timers = new Set<NodeJS.Timeout>();
  const limits = new AccountLimits({ quota: options.quota ?? null, revokeAfter: options.revokeAfter ?? null });
  const stats: EmulatorStats = {
    requests: 0,
    throttled: 0,
    revoked: 0,
    faults: { http500: 0, http503: 0, http429: 0, slow: 0, cut: 0 },
    malformed: 0,
  };

  const serve = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const key = req.headers.authorization;
    const refused = key !== undefined && accounts.has(key) ? limits.check(key) : undefined;
    if (refused) {
      stats.requests += 1;
      if (refused.status === 429) stats.throttled += 1;
      else stats.revoked += 1;
      return send(res, refused);
    }
    const match = matchRoute(url.pathname);
    const siteId =
      match?.route.kind === 'site'
        ? match.id
        : match?.route.kind === 'model'
          ? store.models.get(match.id)?.siteId
          : undefined;
    const { counter, fault: drawn } = faults.nextRequest();
    const forced = faults.settings.hook?.({
      method: req.method ?? 'GET',
      path: url.pathname,
      counter,
      siteId,
      ...(match?.route.kind === 'model' ? { modelId: match.id } : {}),
    });
    const fault = forced && forced !== 'malformed' ? forced : drawn;
    stats.requests += 1;
    if (fault) stats.faults[fault] += 1;
    const answer = () => {
      let reply = safely(() =>
        answerRequest(req, url, match, body, {
          store,
          accounts,
          seed,
          now: clock(),
          historyDays,
          profile,
          failingVintages,
          untidy,
        }),
      );
      if (reply.data && reply.status === 200) {
        const breakIt = forced === 'malformed' || (siteId !== undefined && faults.settings.malformedSites.has(siteId));
        const kind = faults.nextDataResponse(breakIt);
        if (kind) {
          stats.malformed += 1;
          reply = { ...reply, body: malform(reply.body as Record<string, unknown>, kind) };
        }
      }
      return reply;
    };
    switch (fault) {
      case 'http500':
        return send(res, errorReply(500, '(server)', 'internal error (injected fault)'));
      case 'http503':
        return send(res, errorReply(503, '(server)', 'service unavailable (injected fault)'));
      case 'http429':
        return send(res, {
          ...errorReply(429, '(server)', 'too many requests (injected fault)'),
          headers: { 'retry-after': '1' },
        });
      case 'slow': {
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!res.destroyed) send(res, answer());
        }, slowMs);
        timers.add(timer);
        return;
      }
      case 'cut':
        return sendCut(res, answer());
      default:
        return send(res, answer());
    }
  };

  const server = createServer({ keepAlive: true }, (req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES)
        return send(res, errorReply(413, '(body)', `the body exceeds ${MAX_BODY_BYTES} bytes`));
      serve(req, res, Buffer.concat(chunks));
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    store,
    stats: () => structuredClone(stats),
    setFaults(settings) {
      if (settings.faultRate !== undefined) faults.settings.faultRate = settings.faultRate;
      if (settings.malformedRate !== undefined) faults.settings.malformedRate = settings.malformedRate;
      if (settings.malformedSites !== undefined) faults.settings.malformedSites = new Set(settings.malformedSites);
      if (settings.faultHook !== undefined) faults.settings.hook = settings.faultHook ?? undefined;
      if (settings.failingVintages !== undefined) failingVintages = vintageKeys(settings.failingVintages);
    },
    setLimits(settings) {
      Object.assign(limits.settings, settings);
    },
    setUntidy(kinds) {
      untidy = new Set(kinds);
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      store.save();
    },
  };
}

interface ServeContext {
  store: Store;
  accounts: Map<string, string>;
  seed: number;
  now: number;
  historyDays: number;
  profile: EmulatorProfile;
  failingVintages: ReadonlySet<string>;
  untidy: ReadonlySet<UntidyKind>;
}

/** `<id>@<instant>` in the one form the handlers compare (vintageKey), whatever form the instant was written in. */
function vintageKeys(specs: readonly string[]): Set<string> {
  return new Set(
    specs.map((spec) => {
      const at = spec.lastIndexOf('@');
      if (at <= 0)
        throw new RangeError(`a failing vintage is <site or model id>@<instant>, got ${JSON.stringify(spec)}`);
      return vintageKey(spec.slice(0, at), parseInstant(spec.slice(at + 1)));
    }),
  );
}

function answerRequest(
  req: IncomingMessage,
  url: URL,
  match: ReturnType<typeof matchRoute>,
  rawBody: Buffer,
  serve: ServeContext,
): Reply {
  if (!match) return errorReply(404, '(path)', `no endpoint at ${url.pathname}`);
  const method = req.method ?? 'GET';
  const handler = match.route.methods[method];
  if (!handler) {
    return {
      ...errorReply(405, '(method)', `${method} is not allowed here`),
      headers: { allow: Object.keys(match.route.methods).join(', ') },
    };
  }
  const key = req.headers.authorization;
  const account = key === undefined ? undefined : serve.accounts.get(key);
  if (account === undefined) {
    return errorReply(401, 'Authorization', key === undefined ? 'missing API key' : 'unknown API key');
  }
  let body: unknown;
  if (method === 'POST' || method === 'PUT') {
    try {
      body = JSON.parse(rawBody.toString('utf8'));
    } catch (error) {
      return errorReply(400, '(body)', `malformed JSON: ${(error as Error).message}`);
    }
  }
  const ctx: Context = {
    store: serve.store,
    profile: serve.profile,
    account,
    seed: serve.seed,
    now: serve.now,
    historyDays: serve.historyDays,
    failingVintages: serve.failingVintages,
    untidy: serve.untidy,
  };
  try {
    return untidyReply(
      handler(ctx, match.id, queryObject(url.searchParams), body),
      match.route.pattern.join('/'),
      serve.untidy,
    );
  } catch (error) {
    if (error instanceof HttpError) return { status: error.status, body: { errors: error.errors } };
    if (error instanceof NotFoundError)
      return errorReply(404, match.route.kind === 'model' ? 'model_id' : 'site_id', error.message);
    if (error instanceof ConflictError) return errorReply(409, error.field, error.message);
    throw error;
  }
}

/** A bug in the emulator answers 500 naming it, rather than ending the process (a slow answer runs in a timer). */
function safely(answer: () => Reply): Reply {
  try {
    return answer();
  } catch (error) {
    return errorReply(500, '(server)', `emulator error: ${(error as Error).message}`);
  }
}

function send(res: ServerResponse, reply: Reply): void {
  const text = JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...reply.headers,
  });
  res.end(text);
}

/** A body cut off mid-way: the full Content-Length is announced, half is written, the socket is destroyed. */
function sendCut(res: ServerResponse, reply: Reply): void {
  const bytes = Buffer.from(JSON.stringify(reply.body));
  res.writeHead(reply.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': bytes.length,
    ...reply.headers,
  });
  res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => res.destroy());
}

/**
 * Demo sites for every account that does not have its demo fleet yet (a loaded state keeps its
 * own). History starts `historyDays` before the UTC day of `now`; the sites were created a day earlier.
 */
function createDemoSites(
  store: Store,
  apiKeys: string[],
  count: number,
  now: number,
  historyDays: number,
  seed: number,
): void {
  const dataStart = startOfUtcDay(now) - historyDays * DAY;
  store.batch(() => {
    for (const key of apiKeys) {
      const account = Store.accountOf(key);
      if (!store.addAccount(account)) continue;
      for (let i = 0; i < count; i++) {
        store.createSite(account, SiteRequest.parse(demoSiteRequest(i, seed)), dataStart - DAY, dataStart);
      }
    }
  });
}
