import type { Attributes, AttributeValue } from '@opentelemetry/api';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';

/** A histogram's data, merged over the matching data points. */
export interface HistogramSummary {
  readonly count: number;
  readonly sum: number;
  readonly boundaries: readonly number[];
}

/** One collection of metrics, with lookups by name and attribute subset. */
export class MetricsSnapshot {
  constructor(readonly metrics: readonly MetricData[]) {}

  /** The metric called `name`, or undefined if nothing was recorded on it. */
  find(name: string): MetricData | undefined {
    return this.metrics.find((metric) => metric.descriptor.name === name);
  }

  /** Data points of `name` whose attributes include every entry of `filter`. */
  points(name: string, filter: Attributes = {}): DataPoint<unknown>[] {
    const metric = this.find(name);
    if (metric === undefined) return [];
    const points = metric.dataPoints as DataPoint<unknown>[];
    return points.filter((point) => matches(point.attributes, filter));
  }

  /** The total of a counter / up-down counter over matching points; 0 when none. */
  sum(name: string, filter: Attributes = {}): number {
    const metric = this.find(name);
    if (metric !== undefined && metric.dataPointType !== DataPointType.SUM) throw new Error(`${name} is not a sum`);
    return this.points(name, filter).reduce((total, point) => total + (point.value as number), 0);
  }

  /** Count and sum of a histogram over matching points. */
  histogram(name: string, filter: Attributes = {}): HistogramSummary {
    const metric = this.find(name);
    if (metric !== undefined && metric.dataPointType !== DataPointType.HISTOGRAM) throw new Error(`${name} is not a histogram`);
    let count = 0;
    let sum = 0;
    let boundaries: readonly number[] = [];
    for (const point of this.points(name, filter)) {
      const value = point.value as { count: number; sum?: number; buckets: { boundaries: number[] } };
      count += value.count;
      sum += value.sum ?? 0;
      boundaries = value.buckets.boundaries;
    }
    return { count, sum, boundaries };
  }

  /** Every attribute set recorded on `name`. */
  attributeSets(name: string): Attributes[] {
    return this.points(name).map((point) => point.attributes);
  }
}

function matches(attributes: Attributes, filter: Attributes): boolean {
  return Object.entries(filter).every(([key, value]) => sameValue(attributes[key], value));
}

function sameValue(a: AttributeValue | undefined, b: AttributeValue | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The OpenTelemetry SDK wired to in-memory exporters: metrics through a periodic reader that the
 * test flushes on demand (its own interval is an hour, so only `collect()` exports), spans through
 * a simple (synchronous) processor.
 */
export class OtelHarness {
  readonly metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  readonly meterProvider = new MeterProvider({
    readers: [new PeriodicExportingMetricReader({ exporter: this.metricExporter, exportIntervalMillis: 3_600_000 })],
  });
  readonly spanExporter = new InMemorySpanExporter();
  readonly tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(this.spanExporter)] });

  /** Exports the metrics now and returns what was exported (cumulative since the start). */
  async collect(): Promise<MetricsSnapshot> {
    await this.meterProvider.forceFlush();
    const exported = this.metricExporter.getMetrics();
    const latest = exported.at(-1);
    if (latest === undefined) throw new Error('the metric exporter received nothing');
    return new MetricsSnapshot(latest.scopeMetrics.flatMap((scope) => scope.metrics));
  }

  /** Finished spans, optionally only those called `name`. */
  spans(name?: string): ReadableSpan[] {
    const spans = this.spanExporter.getFinishedSpans();
    return name === undefined ? spans : spans.filter((span) => span.name === name);
  }

  async shutdown(): Promise<void> {
    await Promise.all([this.meterProvider.shutdown(), this.tracerProvider.shutdown()]);
  }
}
