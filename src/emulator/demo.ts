// Demo sites for `--sites N`: a repeating mix of solar (fixed, single-axis tracking, and a mixed
// plant), wind and load, spread over real places. Any N >= 3 has all three types; N >= 4 has
// both solar mounts. Everything is derived from the index and the seed, so a seed gives one fleet.
import type { ParsedSiteRequest } from './store.js';
import { hashText, uniform } from './noise.js';

interface Place {
  name: string;
  latitude: number;
  longitude: number;
}

/** Real places (town or plant area coordinates), from the high north to the southern hemisphere. */
const PLACES: Place[] = [
  { name: 'Uppsala', latitude: 59.8586, longitude: 17.6389 },
  { name: 'Esbjerg', latitude: 55.4765, longitude: 8.4594 },
  { name: 'Freiburg', latitude: 47.999, longitude: 7.8421 },
  { name: 'Sevilla', latitude: 37.3891, longitude: -5.9845 },
  { name: 'Abilene', latitude: 32.4487, longitude: -99.7331 },
  { name: 'Jodhpur', latitude: 26.2389, longitude: 73.0243 },
  { name: 'Broken Hill', latitude: -31.9539, longitude: 141.4539 },
  { name: 'Aberdeen', latitude: 57.1497, longitude: -2.0943 },
  { name: 'Lyon', latitude: 45.764, longitude: 4.8357 },
  { name: 'Phoenix', latitude: 33.4484, longitude: -112.074 },
  { name: 'Calama', latitude: -22.4544, longitude: -68.9294 },
  { name: 'Stockholm', latitude: 59.3293, longitude: 18.0686 },
  { name: 'Almeria', latitude: 36.834, longitude: -2.4637 },
  { name: 'Hamburg', latitude: 53.5511, longitude: 9.9937 },
  { name: 'Cape Town', latitude: -33.9249, longitude: 18.4241 },
  { name: 'Bhadla', latitude: 27.5386, longitude: 71.9155 },
];

type Kind = 'solar-fixed' | 'wind' | 'load' | 'solar-tracking' | 'solar-mixed';
const MIX: Kind[] = ['solar-fixed', 'wind', 'load', 'solar-tracking', 'solar-mixed', 'wind'];

/** The request body that creates demo site number `index` (0-based). */
export function demoSiteRequest(index: number, seed: number): ParsedSiteRequest {
  const place = PLACES[index % PLACES.length];
  const round = Math.floor(index / PLACES.length);
  const r = (salt: number) => uniform(hashText(`demo:${seed}`), index, salt);
  // Beyond the first lap of places, sites scatter up to ~0.5 degree around them.
  const latitude = round === 0 ? place.latitude : round4(place.latitude + (r(1) - 0.5));
  const longitude = round === 0 ? place.longitude : round4(place.longitude + (r(2) - 0.5));
  const kind = MIX[index % MIX.length];
  const name = `${place.name} ${kind.replace('-', ' ')}${round === 0 ? '' : ` ${round + 1}`}`;
  const common = { name, latitude, longitude };
  const equatorward = latitude >= 0 ? 180 : 0;
  const size = (low: number, high: number) => Math.round(low + (high - low) * r(3));
  switch (kind) {
    case 'solar-fixed':
      return {
        ...common,
        type: 'solar',
        settings: { model_resolution: '15min', quantileModels: [0.1, 0.5, 0.9], usePhysicalModels: true },
        assets: [
          {
            mount: 'fixed',
            capacity: size(500, 5000),
            tilt: Math.round(Math.min(Math.abs(latitude) * 0.8, 45)),
            azimuth: equatorward,
            install_date: '2021-05-01',
          },
        ],
      };
    case 'solar-tracking':
      return {
        ...common,
        type: 'solar',
        settings: { model_resolution: '15min' },
        assets: [
          {
            mount: 'single_axis_tracking',
            capacity: size(2000, 20000),
            axis_tilt: 0,
            axis_azimuth: 180,
            max_angle: 55,
            install_date: '2022-03-15',
          },
        ],
      };
    case 'solar-mixed':
      return {
        ...common,
        type: 'solar',
        settings: { model_resolution: '15min' },
        assets: [
          { mount: 'fixed', capacity: size(300, 1500), tilt: 10, azimuth: 90, install_date: '2020-06-01' },
          { mount: 'fixed', capacity: size(300, 1500), tilt: 10, azimuth: 270, install_date: '2020-06-01' },
          { mount: 'dual_axis_tracking', capacity: 250, install_date: '2023-09-01' },
        ],
      };
    case 'wind': {
      const count = size(3, 24);
      return {
        ...common,
        type: 'wind',
        settings: { model_resolution: '15min' },
        assets: [{ turbine_type: 'V126/3000', nr_units: count, hub_height: 117, install_date: '2019-11-01' }],
      };
    }
    case 'load':
      return { ...common, type: 'load', settings: { model_resolution: '15min', forecast_max_value: size(800, 6000) } };
  }
}

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
