// Untidy switches: answers the service's pages allow or a stand-in showed, that the emulator's own
// data never has. Each is off unless switched on (EmulatorOptions.untidy, `--untidy`, setUntidy);
// the body ones rewrite a finished 200 answer here, the others change a handler (handlers.ts).

export const UNTIDY_KINDS = [
  /** Get Site Forecast Updates lists a `null` among its issue times. */
  'update-nulls',
  /** `capacity_kw_array` dates as epoch seconds, and the open end's `dateEnd` left out. */
  'numeric-dates',
  /** Get Site Capacity answers `null` at the instants before the site's first capacity point. */
  'capacity-nulls',
  /** Forecast, model output and actuals bodies list their second valid time again, last, with another value. */
  'duplicates',
  /** The same, the repeat listed first: the two values of one valid time in the other order. */
  'duplicates-first',
  /** List Site Models answers `schedule: null` for every model (the reference allows it). */
  'no-schedules',
  /** The first model of the account's first site is listed under every other site of the account too. */
  'shared-models',
  /** Upload Site Capacity answers 500 (after whatever a delete before it did). */
  'capacity-upload-500',
  /** Delete Site Capacity deletes every point of the site, whatever its range. */
  'capacity-delete-all',
  /** Delete Site Capacity answers 422 and deletes nothing. */
  'capacity-delete-422',
] as const;

export type UntidyKind = (typeof UNTIDY_KINDS)[number];

/** What a duplicate adds to the value it repeats (kW): another value, so the rule that picks one shows. */
export const DUPLICATE_OFFSET = 1;

/** A handler's answer (handlers.ts Reply), as far as the body switches read it. */
interface Answer {
  status: number;
  body: unknown;
  /** Set on forecast, output and actuals answers. */
  data?: boolean;
}

/** The answer with the body switches that are on applied; `route` is the route's pattern, joined with '/'. */
export function untidyReply<R extends Answer>(reply: R, route: string, untidy: ReadonlySet<UntidyKind>): R {
  if (reply.status !== 200 || untidy.size === 0) return reply;
  if (route === 'sites/:id/forecast/updates' && untidy.has('update-nulls')) {
    const times = reply.body as (string | null)[];
    return { ...reply, body: [...times.slice(0, 1), null, ...times.slice(1)] };
  }
  if ((route === 'sites' || route === 'sites/:id') && untidy.has('numeric-dates')) {
    const body = reply.body as Record<string, unknown> | Record<string, unknown>[];
    return { ...reply, body: Array.isArray(body) ? body.map(numericDates) : numericDates(body) };
  }
  if (reply.data && untidy.has('duplicates')) return { ...reply, body: duplicated(reply.body as Series, 'last') };
  if (reply.data && untidy.has('duplicates-first'))
    return { ...reply, body: duplicated(reply.body as Series, 'first') };
  return reply;
}

/** A site with its segments' dates as epoch seconds and no `dateEnd` on the open segment. */
function numericDates(site: Record<string, unknown>): Record<string, unknown> {
  const segments = (site.capacity_kw_array ?? []) as Record<string, unknown>[];
  const seconds = (date: unknown) => (typeof date === 'string' ? Date.parse(date) / 1000 : date);
  return {
    ...site,
    capacity_kw_array: segments.map(({ dateStart, dateEnd, ...rest }) => ({
      ...rest,
      ...(dateStart === undefined ? {} : { dateStart: seconds(dateStart) }),
      ...(dateEnd === null || dateEnd === undefined ? {} : { dateEnd: seconds(dateEnd) }),
    })),
  };
}

type Series = Record<string, unknown> & { valid_time: unknown[] };

/** The body with its second row listed again at the end (or the start), its value raised by DUPLICATE_OFFSET. */
function duplicated(body: Series, where: 'first' | 'last'): Series {
  if (body.valid_time.length < 2) return body;
  const copy: Series = { ...body };
  for (const [name, column] of Object.entries(body)) {
    if (!Array.isArray(column) || column.length !== body.valid_time.length) continue;
    const repeated = column[1];
    const other = (name === 'forecast' || name === 'value') && typeof repeated === 'number';
    const repeat = other ? repeated + DUPLICATE_OFFSET : repeated;
    copy[name] = where === 'last' ? [...column, repeat] : [repeat, ...column];
  }
  return copy;
}
