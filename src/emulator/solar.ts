// Sun position and plane-of-array irradiance, enough physics for plausible PV power:
// NOAA's solar position (declination, equation of time, hour angle), Haurwitz clear-sky GHI,
// Meinel direct normal irradiance, and the panel normal for fixed, single-axis and dual-axis mounts.
import type { PVAsset } from '../api/schemas.js';
import { DAY, HOUR } from '../time.js';

const RAD = Math.PI / 180;

/** The unit vector towards the sun in east-north-up coordinates. */
export interface SunVector {
  east: number;
  north: number;
  up: number;
}

/** Sun direction at instant `ms` for a site at `latitude`, `longitude` (degrees). */
export function sunVector(ms: number, latitude: number, longitude: number): SunVector {
  const date = new Date(ms);
  const startOfYear = Date.UTC(date.getUTCFullYear(), 0, 1);
  const dayOfYear = Math.floor((ms - startOfYear) / DAY);
  const hourUtc = (ms % DAY) / HOUR;
  const gamma = ((2 * Math.PI) / 365) * (dayOfYear + (hourUtc - 12) / 24);
  const equationOfTime =
    229.18 *
    (0.000075 +
      0.001868 * Math.cos(gamma) -
      0.032077 * Math.sin(gamma) -
      0.014615 * Math.cos(2 * gamma) -
      0.040849 * Math.sin(2 * gamma));
  const declination =
    0.006918 -
    0.399912 * Math.cos(gamma) +
    0.070257 * Math.sin(gamma) -
    0.006758 * Math.cos(2 * gamma) +
    0.000907 * Math.sin(2 * gamma) -
    0.002697 * Math.cos(3 * gamma) +
    0.00148 * Math.sin(3 * gamma);
  const trueSolarMinutes = hourUtc * 60 + equationOfTime + 4 * longitude;
  const hourAngle = (trueSolarMinutes / 4 - 180) * RAD;
  const phi = latitude * RAD;
  return {
    east: -Math.cos(declination) * Math.sin(hourAngle),
    north: Math.cos(phi) * Math.sin(declination) - Math.sin(phi) * Math.cos(declination) * Math.cos(hourAngle),
    up: Math.sin(phi) * Math.sin(declination) + Math.cos(phi) * Math.cos(declination) * Math.cos(hourAngle),
  };
}

/** Clear-sky irradiance (W/m²) for a cosine of the zenith angle: global, direct normal, diffuse. */
export interface Irradiance {
  ghi: number;
  dni: number;
  dhi: number;
}

export function clearSky(cosZenith: number): Irradiance {
  if (cosZenith <= 0.01) return { ghi: 0, dni: 0, dhi: 0 };
  const ghi = 1098 * cosZenith * Math.exp(-0.057 / cosZenith);
  const zenithDeg = Math.acos(cosZenith) / RAD;
  const airMass = 1 / (cosZenith + 0.50572 * (96.07995 - zenithDeg) ** -1.6364);
  const dni = Math.min(1367 * 0.7 ** (airMass ** 0.678), ghi / cosZenith);
  return { ghi, dni, dhi: Math.max(ghi - dni * cosZenith, 0.05 * ghi) };
}

/**
 * Irradiance under clouds for a clear-sky index `k` in (0, 1]: the global part scales with k,
 * the direct beam falls faster (thin cloud scatters the beam into diffuse light first).
 */
export function cloudy(clear: Irradiance, k: number, cosZenith: number): Irradiance {
  const ghi = clear.ghi * k;
  const beamShare = Math.min(Math.max((k - 0.25) / 0.75, 0), 1) ** 1.5;
  const dni = clear.dni * beamShare;
  return { ghi, dni, dhi: Math.max(ghi - dni * Math.max(cosZenith, 0), 0) };
}

const ALBEDO = 0.2;

/** Plane-of-array irradiance (W/m²) on a panel with unit normal `normal`. */
function planeOfArray(sun: SunVector, normal: SunVector, sky: Irradiance): number {
  const cosIncidence = Math.max(normal.east * sun.east + normal.north * sun.north + normal.up * sun.up, 0);
  const cosTilt = Math.min(Math.max(normal.up, -1), 1);
  return sky.dni * cosIncidence + (sky.dhi * (1 + cosTilt)) / 2 + (sky.ghi * ALBEDO * (1 - cosTilt)) / 2;
}

/** Normal of a panel tilted `tilt` degrees from horizontal, facing azimuth `azimuth` (clockwise from north). */
function fixedNormal(tilt: number, azimuth: number): SunVector {
  const b = tilt * RAD,
    g = azimuth * RAD;
  return { east: Math.sin(b) * Math.sin(g), north: Math.sin(b) * Math.cos(g), up: Math.cos(b) };
}

/**
 * Normal of a single-axis tracker (no backtracking): the panel turns about an axis pointing to
 * `axisAzimuth`, raised by `axisTilt`, towards the sun, by at most `maxAngle` degrees either way.
 */
function singleAxisNormal(sun: SunVector, axisTilt: number, axisAzimuth: number, maxAngle: number): SunVector {
  const bt = axisTilt * RAD,
    ga = axisAzimuth * RAD;
  const axis = { east: Math.cos(bt) * Math.sin(ga), north: Math.cos(bt) * Math.cos(ga), up: Math.sin(bt) };
  // The panel's rest normal: "up" with its component along the axis removed.
  const rest = normalize({ east: -axis.up * axis.east, north: -axis.up * axis.north, up: 1 - axis.up * axis.up });
  const side = cross(axis, rest);
  const angle = Math.atan2(dot(side, sun), dot(rest, sun));
  const limit = maxAngle * RAD;
  const turn = Math.min(Math.max(angle, -limit), limit);
  return {
    east: rest.east * Math.cos(turn) + side.east * Math.sin(turn),
    north: rest.north * Math.cos(turn) + side.north * Math.sin(turn),
    up: rest.up * Math.cos(turn) + side.up * Math.sin(turn),
  };
}

/** The plane-of-array irradiance (W/m²) an asset receives. */
export function assetIrradiance(asset: PVAsset, sun: SunVector, sky: Irradiance): number {
  if (sun.up <= 0.01) return 0;
  switch (asset.mount) {
    case 'fixed':
      return planeOfArray(sun, fixedNormal(asset.tilt, asset.azimuth), sky);
    case 'single_axis_tracking':
      return planeOfArray(sun, singleAxisNormal(sun, asset.axis_tilt, asset.axis_azimuth, asset.max_angle), sky);
    case 'dual_axis_tracking':
      return planeOfArray(sun, sun, sky);
  }
}

/** Performance ratio from plane-of-array irradiance to DC power (temperature, soiling, inverter). */
const PERFORMANCE_RATIO = 0.86;

/** An asset's power in kW: capacity (DC kW at 1000 W/m²) times irradiance, clipped at capacity. */
export function assetPower(asset: PVAsset, poa: number): number {
  return Math.min((asset.capacity * PERFORMANCE_RATIO * poa) / 1000, asset.capacity);
}

function dot(a: SunVector, b: SunVector): number {
  return a.east * b.east + a.north * b.north + a.up * b.up;
}

function cross(a: SunVector, b: SunVector): SunVector {
  return {
    east: a.north * b.up - a.up * b.north,
    north: a.up * b.east - a.east * b.up,
    up: a.east * b.north - a.north * b.east,
  };
}

function normalize(v: SunVector): SunVector {
  const n = Math.hypot(v.east, v.north, v.up);
  return { east: v.east / n, north: v.north / n, up: v.up / n };
}
