// Reference forecasts built from the warehouse's actuals: persistence of what was measured one
// period earlier, the period being a day for solar and wind and a week for load. The value used
// is the latest one at the same time of day (of week, for load) that was already measured when
// the forecast was issued, so a reference never knows more than the forecast it is compared with.
import { DAY } from '../../time.js';

/** Persistence period by site type: day-ahead for solar and wind, week-ahead for load. */
export function referencePeriodMs(siteType: string): number {
  return siteType === 'load' ? 7 * DAY : DAY;
}

/** The same, as SQL over a column holding the site type; the result is in microseconds. */
export function referencePeriodUsSql(siteType: string): string {
  return `(CASE WHEN ${siteType} = 'load' THEN ${referencePeriodMs('load') * 1000} ELSE ${referencePeriodMs('solar') * 1000} END)`;
}

/**
 * The valid time whose actual is the reference for `validTime` issued at `issueTime`:
 * validTime - k * period with the smallest k >= 1 that lies at or before the issue time
 * (k = 1 when the issue time is unknown). For a solar forecast issued today at 06:00 for
 * tomorrow 12:00, today 12:00 was not yet measured at issue, so it is yesterday 12:00 (k = 2).
 */
export function referenceTimeSql(validTime: string, issueTime: string, periodUs: string): string {
  const leadUs = `(epoch_us(${validTime}) - epoch_us(${issueTime}))`;
  const k = `greatest(1, coalesce(CAST(ceil(${leadUs} / ${periodUs}) AS BIGINT), 1))`;
  return `make_timestamptz(epoch_us(${validTime}) - ${k} * ${periodUs})`;
}
