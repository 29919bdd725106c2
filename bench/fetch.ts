// The raw limit of reading: the same requests the initial sync makes, fetched with undici and
// parsed with JSON.parse, with no validation and no database.
import pLimit from 'p-limit';
import { Pool } from 'undici';
import { loadConfig } from '../src/config.js';
import {
  planActuals,
  planForecastUpdates,
  planModelOutputs,
  planOutputWindow,
  type WindowSettings,
} from '../src/sync/windows.js';
import { DAY, formatInstant } from '../src/time.js';

export interface RawFetchOptions {
  baseUrl: string;
  apiKey: string;
  /** The clock the sync ran with, so that the windows are the same. */
  now: number;
  historyDays: number;
  connections?: number;
  inFlight?: number;
  /** Sees every series body as it came (text), for bench/parse.ts to parse again. */
  onSeriesBody?: (kind: SeriesKind, text: string) => void;
}

/** The columnar bodies: Get Site Forecast, Get Model Output, Get Site Actuals. */
export type SeriesKind = 'forecast' | 'output' | 'actuals';

export async function rawFetch(
  options: RawFetchOptions,
): Promise<{ seconds: number; rows: number; responses: number }> {
  const defaults = loadConfig(undefined, {}).sync;
  const settings: WindowSettings = {
    lookback: defaults.lookback,
    initialHistory: options.historyDays * DAY,
    horizon: defaults.horizon,
  };
  const pool = new Pool(options.baseUrl, { connections: options.connections ?? 32 });
  const limit = pLimit(options.inFlight ?? 32);
  let rows = 0;
  let responses = 0;
  const get = async (path: string, query: Record<string, string> = {}, kind?: SeriesKind): Promise<any> => {
    const qs = new URLSearchParams(query).toString();
    const res = await pool.request({
      method: 'GET',
      path: `/platform/v2${path}${qs ? `?${qs}` : ''}`,
      headers: { authorization: options.apiKey },
    });
    const text = await res.body.text();
    if (kind) options.onSeriesBody?.(kind, text);
    const body = JSON.parse(text);
    if (res.statusCode !== 200) throw new Error(`GET ${path}: ${res.statusCode}`);
    responses += 1;
    rows += Array.isArray(body?.valid_time) ? body.valid_time.length : Array.isArray(body) ? body.length : 1;
    return body;
  };
  const window = (start: number, end: number, asOf: number | null) => ({
    start_date: formatInstant(start),
    end_date: formatInstant(end),
    ...(asOf === null ? {} : { as_of: formatInstant(asOf) }),
  });

  const t0 = process.hrtime.bigint();
  const sites: { site_id: string }[] = await get('/sites');
  const actuals = [planActuals(options.now, null, settings).window];
  await Promise.all(
    sites.map(async ({ site_id: id }) => {
      const [models] = await Promise.all([
        limit(() => get(`/sites/${id}/models`, { extra: 'serving_active' })),
        limit(() => get(`/sites/${id}/models`, { model_type: 'ai' })),
        limit(() => get(`/sites/${id}/models`, { model_type: 'physical' })),
      ]);
      const updates = ((await limit(() => get(`/sites/${id}/forecast/updates`))) as string[]).map((t) => Date.parse(t));
      const issued = planForecastUpdates(options.now, null, settings, updates).reads;
      await Promise.all([
        ...issued.map((r) => limit(() => get(`/sites/${id}/forecast`, window(r.start, r.end, r.asOf), 'forecast'))),
        ...actuals.map((r) => limit(() => get(`/sites/${id}/actual`, window(r.start, r.end, null), 'actuals'))),
        ...(models as { id: string; schedule?: { value: string } | null }[]).flatMap((m) =>
          planModelOutputs(
            planOutputWindow(options.now, null, settings),
            m.schedule?.value,
            updates,
            options.now,
            settings.horizon,
          ).map((r) => limit(() => get(`/models/${m.id}/output`, window(r.start, r.end, r.asOf), 'output'))),
        ),
      ]);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  await pool.close();
  return { seconds, rows, responses };
}
