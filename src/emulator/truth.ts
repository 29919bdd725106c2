// What really happened at each site: 15-minute power that follows the sun, the wind or the
// working day. Values are interval-beginning, as the service labels them: the value at valid time t
// is the power of the quarter hour [t, t + 15 min), taken at its midpoint. Cached per site and UTC
// day in a bounded LRU.
import { assetIrradiance, assetPower, clearSky, cloudy, sunVector } from './solar.js';
import { hashText, smoothNoise } from './noise.js';
import { nameplate, type SiteRecord } from './store.js';
import { DAY, HOUR } from '../time.js';

export const STEP_MS = 15 * 60_000;
const STEPS_PER_DAY = DAY / STEP_MS;

/**
 * One UTC day of a site: `power` is the truth in kW; `driver` is what forecasts perturb
 * (solar: clear-sky power in kW; wind: hub-height wind speed in m/s; load: unused).
 */
export interface DaySeries {
  power: Float32Array;
  driver: Float32Array;
}

/**
 * The days the cache keeps: at least MIN_CACHED_DAYS, and DAYS_PER_SITE for every site it has
 * generated a day of. A sync reads each site's last days (its actuals' lookback, its forecasts'
 * horizon) one site after another, so a cache smaller than that would evict every day before
 * the next run reads it again, and generate each one anew.
 */
const MIN_CACHED_DAYS = 20_000;
const DAYS_PER_SITE = 4;
const cache = new Map<string, DaySeries>();
const sitesGenerated = new Set<string>();

/** The day series of a site holding valid time `t` (a multiple of 15 minutes); the day's start. */
function dayOf(site: SiteRecord, seed: number, dayStart: number): DaySeries {
  const key = `${site.id}:${site.revision}:${seed}:${dayStart}`;
  let day = cache.get(key);
  if (day) {
    cache.delete(key); // keep recently used days at the end of the LRU order
  } else {
    day = generateDay(site, seed, dayStart);
    sitesGenerated.add(site.id);
    if (cache.size >= Math.max(MIN_CACHED_DAYS, DAYS_PER_SITE * sitesGenerated.size))
      cache.delete(cache.keys().next().value as string);
  }
  cache.set(key, day);
  return day;
}

/**
 * Reads one site's series in time order: `at(t)` positions on valid time t, then `power` and
 * `driver` are its values. It keeps the current day, so a run of valid times costs one lookup a day.
 */
export class SeriesCursor {
  private dayStart = Number.NaN;
  private day: DaySeries | undefined;
  private index = 0;

  constructor(
    private readonly site: SiteRecord,
    private readonly seed: number,
  ) {}

  at(t: number): this {
    const dayStart = Math.floor(t / DAY) * DAY;
    if (dayStart !== this.dayStart) {
      this.day = dayOf(this.site, this.seed, dayStart);
      this.dayStart = dayStart;
    }
    this.index = Math.round((t - dayStart) / STEP_MS);
    return this;
  }

  get power(): number {
    return (this.day as DaySeries).power[this.index];
  }

  get driver(): number {
    return (this.day as DaySeries).driver[this.index];
  }
}

function generateDay(site: SiteRecord, seed: number, dayStart: number): DaySeries {
  const power = new Float32Array(STEPS_PER_DAY);
  const driver = new Float32Array(STEPS_PER_DAY);
  const weatherSeed = siteSeed(site, seed);
  for (let i = 0; i < STEPS_PER_DAY; i++) {
    const mid = dayStart + i * STEP_MS + STEP_MS / 2;
    if (site.type === 'solar') {
      const sun = sunVector(mid, site.latitude, site.longitude);
      const clear = clearSky(sun.up);
      const k = cloudIndex(site, weatherSeed, mid);
      const sky = cloudy(clear, k, sun.up);
      let actual = 0,
        potential = 0;
      for (const asset of site.assets) {
        if (asset.install_date && Date.parse(asset.install_date) > mid) continue;
        actual += assetPower(asset, assetIrradiance(asset, sun, sky));
        potential += assetPower(asset, assetIrradiance(asset, sun, clear));
      }
      power[i] = actual;
      driver[i] = potential;
    } else if (site.type === 'wind') {
      const speed = windSpeed(site, weatherSeed, mid);
      driver[i] = speed;
      power[i] = nameplate(site) * powerCurve(speed);
    } else {
      power[i] = loadAt(site, weatherSeed, mid);
    }
  }
  return { power, driver };
}

/** The seed of a site's weather: the emulator's seed and the place, so neighbours share the sky. */
function siteSeed(site: SiteRecord, seed: number): number {
  return hashText(`${seed}:${site.latitude.toFixed(2)}:${site.longitude.toFixed(2)}`);
}

/** Clear-sky index: cloudier towards the poles, smooth over hours, between 0.08 and 1. */
function cloudIndex(site: SiteRecord, weatherSeed: number, ms: number): number {
  const mean = 0.86 - 0.0045 * Math.abs(site.latitude);
  const k =
    mean + 0.28 * smoothNoise(weatherSeed, ms, 4 * HOUR) + 0.08 * smoothNoise(weatherSeed ^ 0x1234567, ms, HOUR);
  return Math.min(Math.max(k, 0.08), 1);
}

/** Hub-height wind speed (m/s): a site mean, weather systems over a day or two, a weak daily cycle. */
function windSpeed(site: SiteRecord, weatherSeed: number, ms: number): number {
  const mean = 7.2 + (weatherSeed % 1000) / 500; // 7.2 to 9.2 m/s
  const weather =
    0.42 * smoothNoise(weatherSeed, ms, 30 * HOUR) + 0.15 * smoothNoise(weatherSeed ^ 0x9e37, ms, 3 * HOUR);
  const solarHour = localSolarHour(site.longitude, ms);
  const daily = 0.08 * Math.cos(((solarHour - 15) / 24) * 2 * Math.PI);
  return Math.max(mean * Math.exp(weather + daily - 0.09), 0);
}

/** Share of rated power at a wind speed: cut-in 3 m/s, rated 12 m/s, cut-out 25 m/s. */
export function powerCurve(speed: number): number {
  if (speed < 3 || speed >= 25) return 0;
  if (speed >= 12) return 1;
  return (speed ** 3 - 27) / (1728 - 27);
}

/** Load (kW): a night base, morning and evening peaks, quieter weekends, a little noise. */
function loadAt(site: SiteRecord, weatherSeed: number, ms: number): number {
  const solarHour = localSolarHour(site.longitude, ms);
  const weekday = new Date(ms + (site.longitude / 15) * HOUR).getUTCDay();
  const weekend = weekday === 0 || weekday === 6;
  const morning = Math.exp(-(((solarHour - 8.5) / 2.2) ** 2));
  const evening = Math.exp(-(((solarHour - 18.5) / 2.5) ** 2));
  const daytime = solarHour > 7 && solarHour < 20 ? 0.15 : 0;
  const shape = 0.42 + 0.3 * morning + 0.35 * evening + daytime;
  const level = (weekend ? 0.82 : 1) * shape * (1 + 0.05 * smoothNoise(weatherSeed, ms, 2 * HOUR));
  return Math.min(Math.max(level, 0.05), 1) * nameplate(site);
}

/** Local mean solar time in hours [0, 24) from the longitude. */
export function localSolarHour(longitude: number, ms: number): number {
  const hours = ((ms % DAY) / HOUR + longitude / 15) % 24;
  return hours < 0 ? hours + 24 : hours;
}
