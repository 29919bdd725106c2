/**
 * Counters, gauges and histograms in Prometheus' text exposition format (version 0.0.4), the
 * format `/metrics`, node_exporter's textfile collector and a Pushgateway all take. It is the
 * small part of prom-client efsync needs (prom-client is not among the dependencies), with the
 * same shapes: a metric has a name, a help text and fixed label names; series are set by labels.
 *
 *   const registry = new Registry();
 *   const runs = registry.gauge('efsync_x_seconds', 'What it measures', ['job']);
 *   runs.set({ job: 'nightly' }, 12.5);
 *   registry.text();   // # HELP ...\n# TYPE ...\nefsync_x_seconds{job="nightly"} 12.5\n
 */

export type Labels = Record<string, string>;

type Kind = 'counter' | 'gauge' | 'histogram';

/** One metric family: its series by label values, in the order they were first set. */
abstract class Metric<Value> {
  protected readonly series = new Map<string, { labels: Labels; value: Value }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly kind: Kind,
  ) {}

  /** Forgets every series (a gauge read afresh from the warehouse at each scrape). */
  reset(): void {
    this.series.clear();
  }

  protected entry(labels: Labels, initial: () => Value): { labels: Labels; value: Value } {
    const names = Object.keys(labels);
    if (names.length !== this.labelNames.length || !this.labelNames.every((n) => n in labels))
      throw new Error(`${this.name}: labels ${names.join(',')} are not ${this.labelNames.join(',')}`);
    const key = JSON.stringify(this.labelNames.map((n) => labels[n]));
    let entry = this.series.get(key);
    if (!entry) {
      entry = { labels: { ...labels }, value: initial() };
      this.series.set(key, entry);
    }
    return entry;
  }

  /** The family's lines: HELP, TYPE, then one sample line per series (histograms: several). */
  lines(): string[] {
    const head = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.kind}`];
    return [...head, ...[...this.series.values()].flatMap((s) => this.samples(s.labels, s.value))];
  }

  protected abstract samples(labels: Labels, value: Value): string[];
}

export class Gauge extends Metric<number> {
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    super(name, help, labelNames, 'gauge');
  }

  set(labels: Labels, value: number): void {
    this.entry(labels, () => 0).value = value;
  }

  protected samples(labels: Labels, value: number): string[] {
    return [sample(this.name, labels, value)];
  }
}

export class Counter extends Metric<number> {
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    if (!name.endsWith('_total')) throw new Error(`${name}: a counter's name ends in _total`);
    super(name, help, labelNames, 'counter');
  }

  inc(labels: Labels, by = 1): void {
    if (by < 0) throw new Error(`${this.name}: a counter only goes up`);
    this.entry(labels, () => 0).value += by;
  }

  protected samples(labels: Labels, value: number): string[] {
    return [sample(this.name, labels, value)];
  }
}

interface Buckets {
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram extends Metric<Buckets> {
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    /** Upper bounds, ascending; +Inf is added. */
    readonly buckets: readonly number[],
  ) {
    super(name, help, labelNames, 'histogram');
  }

  observe(labels: Labels, value: number): void {
    const entry = this.entry(labels, () => ({ counts: this.buckets.map(() => 0), sum: 0, count: 0 })).value;
    this.buckets.forEach((bound, i) => {
      if (value <= bound) entry.counts[i] += 1;
    });
    entry.sum += value;
    entry.count += 1;
  }

  protected samples(labels: Labels, value: Buckets): string[] {
    return [
      ...this.buckets.map((bound, i) =>
        sample(`${this.name}_bucket`, { ...labels, le: number(bound) }, value.counts[i]),
      ),
      sample(`${this.name}_bucket`, { ...labels, le: '+Inf' }, value.count),
      sample(`${this.name}_sum`, labels, value.sum),
      sample(`${this.name}_count`, labels, value.count),
    ];
  }
}

export class Registry {
  private readonly metrics: { name: string; lines(): string[] }[] = [];

  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.add(new Gauge(name, help, labelNames));
  }

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.add(new Counter(name, help, labelNames));
  }

  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): Histogram {
    return this.add(new Histogram(name, help, labelNames, buckets));
  }

  /** Every family, in the order registered, as the text format. */
  text(): string {
    return `${this.metrics.flatMap((m) => m.lines()).join('\n')}\n`;
  }

  private add<M extends { name: string; lines(): string[] }>(metric: M): M {
    if (this.metrics.some((m) => m.name === metric.name)) throw new Error(`${metric.name} is registered twice`);
    this.metrics.push(metric);
    return metric;
  }
}

/** The text format's content type, for `/metrics` and a push. */
export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

function sample(name: string, labels: Labels, value: number): string {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return `${name}${pairs.length > 0 ? `{${pairs.join(',')}}` : ''} ${number(value)}`;
}

function number(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

const escapeHelp = (text: string) => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const escapeLabel = (text: string) => escapeHelp(text).replace(/"/g, '\\"');
