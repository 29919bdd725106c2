// The service efsync talks to: the configured one, or an embedded emulator when none is
// configured (demo data on loopback), so that every command runs on a fresh clone.
import { ServiceClient, type RequestObserver, type ServiceClientOptions } from './api/client.js';
import { ConfigError } from './errors.js';
import { resolveApiKey, type LoadedConfig } from './config.js';
import type { Logger } from './log.js';

const EMBEDDED_API_KEY = 'efsync-embedded-demo';

export interface ServiceConnection {
  client: ServiceClient;
  /** True when the client talks to an emulator started here (demo data). */
  embedded: boolean;
  /** Closes the client and, when embedded, the emulator. */
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** The embedded emulator's clock (tests); the wall clock otherwise. */
  now?: () => number;
  env?: NodeJS.ProcessEnv;
  /** The run's signal: aborting it cancels every request in flight and every wait (a timeout, a signal). */
  signal?: AbortSignal;
  /** Told of every request and retry (the runner's metrics). */
  observer?: RequestObserver;
}

export class MissingApiKeyError extends ConfigError {
  constructor(baseUrl: string) {
    super(
      `no API key for ${baseUrl}: set EFSYNC_API_KEY, or EFSYNC_API_KEY_FILE (or service.api_key_file in the config) to a file holding it`,
    );
  }
}

export async function connectService(
  config: LoadedConfig,
  log: Logger,
  options: ConnectOptions = {},
): Promise<ServiceConnection> {
  const baseUrl = config.service.base_url;
  if (baseUrl === null) return connectEmbedded(config, log, options);
  const apiKey = resolveApiKey(config, options.env);
  if (apiKey === null) throw new MissingApiKeyError(baseUrl);
  const client = clientFromConfig(config, apiKey, log, clientOverrides(options));
  return { client, embedded: false, close: () => client.close() };
}

async function connectEmbedded(config: LoadedConfig, log: Logger, options: ConnectOptions): Promise<ServiceConnection> {
  // A fixed key: the emulator derives site ids from the account, and the demo warehouse must see
  // the same sites run after run. It listens on loopback only, for this process's lifetime.
  const apiKey = EMBEDDED_API_KEY;
  // Imported here: a process that talks to a configured service never loads the emulator.
  const { startEmulator } = await import('./emulator/server.js');
  const emulator = await startEmulator({
    apiKeys: [apiKey],
    sites: config.emulator.sites,
    seed: config.emulator.seed,
    profile: config.emulator.profile,
    host: '127.0.0.1',
    port: 0,
    ...(options.now ? { now: options.now } : {}),
  });
  log.warn(
    { url: emulator.url, sites: config.emulator.sites, seed: config.emulator.seed },
    'no service configured (service.base_url / EFSYNC_BASE_URL): using an embedded emulator with DEMO data',
  );
  const client = clientFromConfig(
    { ...config, service: { ...config.service, base_url: emulator.url } },
    apiKey,
    log,
    clientOverrides(options),
  );
  return {
    client,
    embedded: true,
    async close() {
      await client.close();
      await emulator.close();
    },
  };
}

/** The client `config.service` describes; `overrides` wins (e.g. the base URL of an embedded emulator). */
export function clientFromConfig(
  config: LoadedConfig,
  apiKey: string,
  log?: Logger,
  overrides: Partial<ServiceClientOptions> = {},
): ServiceClient {
  const service = config.service;
  const baseUrl = overrides.baseUrl ?? service.base_url;
  if (!baseUrl) {
    throw new ConfigError(
      'service.base_url is not set (config file or EFSYNC_BASE_URL); start the emulator or point it at the service',
    );
  }
  return new ServiceClient({
    baseUrl,
    apiKey,
    connections: service.connections,
    timeouts: { connect: service.timeouts.connect, headers: service.timeouts.headers, body: service.timeouts.body },
    retries: {
      attempts: service.retries.attempts,
      baseDelay: service.retries.base_delay,
      maxDelay: service.retries.max_delay,
      retryAfterMax: service.retries.retry_after_max,
    },
    rateLimit: service.rate_limit && { requests: service.rate_limit.requests, perMs: service.rate_limit.per },
    throttle: {
      attempts: service.throttle.attempts,
      baseDelay: service.throttle.base_delay,
      maxDelay: service.throttle.max_delay,
    },
    outputFillParam: service.output_fill_param,
    unreachableAfter: service.unreachable_after,
    log,
    ...overrides,
  });
}

/** What a connection's options add to the client's: the run's signal and the metrics' observer. */
function clientOverrides(options: ConnectOptions): Partial<ServiceClientOptions> {
  return {
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.observer ? { observer: options.observer } : {}),
  };
}
