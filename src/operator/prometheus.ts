/**
 * The Prometheus text exposition format 0.0.4, as much of it as the
 * broker's metrics need: counters and histograms with labels, gauges, and
 * the escaping of help texts and label values. `Metrics` in
 * ./metrics.ts decides what is measured.
 *
 * @module
 */

/** Label values by label name. */
export type Labels = Record<string, string>;

/** A counter: one value per label set, rendered as `name{labels} value`. */
export class Counter {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly values: Map<string, number> = new Map();
  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
    if (labelNames.length === 0) this.values.set("", 0);
  }

  inc(labels: Labels = {}, by = 1): void {
    const key = labelText(this.labelNames, labels);
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }

  get(labels: Labels = {}): number {
    return this.values.get(labelText(this.labelNames, labels)) ?? 0;
  }

  render(out: string[]): void {
    header(out, this.name, this.help, "counter");
    for (const [key, value] of this.values) {
      out.push(`${this.name}${key} ${formatNumber(value)}`);
    }
  }
}

/** One label set of a histogram. */
export interface HistogramSeries {
  counts: number[];
  sum: number;
  count: number;
}

/** A histogram: cumulative buckets, sum and count per label set. */
export class Histogram {
  readonly name: string;
  readonly help: string;
  readonly buckets: readonly number[];
  readonly labelNames: readonly string[];
  readonly series: Map<string, HistogramSeries> = new Map();
  constructor(
    name: string,
    help: string,
    buckets: readonly number[],
    labelNames: readonly string[] = [],
  ) {
    this.name = name;
    this.help = help;
    this.buckets = buckets;
    this.labelNames = labelNames;
  }

  observe(value: number, labels: Labels = {}): void {
    if (!Number.isFinite(value) || value < 0) return;
    const key = labelText(this.labelNames, labels);
    let series = this.series.get(key);
    if (series === undefined) {
      series = { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(key, series);
    }
    for (let i = 0; i < this.buckets.length; i++) {
      if (value <= this.buckets[i]!) series.counts[i]! += 1;
    }
    series.sum += value;
    series.count += 1;
  }

  render(out: string[]): void {
    header(out, this.name, this.help, "histogram");
    for (const [key, series] of this.series) {
      // `le` goes last, inside the series' own label set.
      const inner = key === "" ? "" : `${key.slice(1, -1)},`;
      this.buckets.forEach((bound, i) => {
        out.push(
          `${this.name}_bucket{${inner}le="${formatNumber(bound)}"} ${
            series.counts[i]
          }`,
        );
      });
      out.push(`${this.name}_bucket{${inner}le="+Inf"} ${series.count}`);
      out.push(`${this.name}_sum${key} ${formatNumber(series.sum)}`);
      out.push(`${this.name}_count${key} ${series.count}`);
    }
  }
}

/** Writes the `# HELP` and `# TYPE` lines of a metric. */
export function header(
  out: string[],
  name: string,
  help: string,
  type: string,
): void {
  out.push(
    `# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`,
  );
  out.push(`# TYPE ${name} ${type}`);
}

/** Writes a gauge without labels: its header and its value. */
export function gauge(
  out: string[],
  name: string,
  help: string,
  value: number,
): void {
  header(out, name, help, "gauge");
  out.push(`${name} ${formatNumber(value)}`);
}

/** `{a="1",b="2"}` in `names` order, or "" without labels. */
function labelText(names: readonly string[], labels: Labels): string {
  if (names.length === 0) return "";
  return `{${
    names.map((name) => `${name}="${escapeLabel(labels[name] ?? "")}"`).join(
      ",",
    )
  }}`;
}

/** Escapes a label value (backslash, double quote, newline). */
export function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(
    /\n/g,
    "\\n",
  );
}

function formatNumber(value: number): string {
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  if (Number.isNaN(value)) return "NaN";
  return String(value);
}
