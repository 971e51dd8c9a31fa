// prom-client's default `process_*` / `nodejs_*` metrics, with the event-loop
// lag ones measured here instead. prom-client samples the loop every 10 ms
// (its eventLoopMonitoringPrecision): that timer was most of an idle logbook's
// ~18 ms of CPU and ~220 wake-ups per second (measured from /proc/<pid>/task
// over 30 s; ~2 ms and ~25 without it). A coarser precision is no fix there: its
// histogram is reset at every scrape, and a scrape that follows another
// within the precision (two Prometheus replicas, a test) read NaN, written
// "Nan", and a minimum of 9.2e9 s. Here the loop is sampled every 100 ms and a
// scrape with no new sample keeps the last values. Names and help texts are
// prom-client's; the values are the delay beyond the sampling interval, where
// prom-client's include its 10 ms (an idle loop read ~0.010 s there, ~0 here).
import { createRequire } from 'node:module';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';
import { busyShareMeter, delayBeyondMs } from './event_loop.js';

/** ms between samples of the loop's delay */
const RESOLUTION_MS = 100;

/**
 * prom-client's default metrics but eventLoopLag (lib/defaultMetrics.js lists
 * them; the version is pinned, and a module that moves fails at start-up and
 * in test/ops/ops_health_metrics.test.ts).
 */
const PROM_DEFAULTS = [
  'processCpuTotal', 'processStartTime', 'osMemoryHeap', 'processOpenFileDescriptors', 'processMaxFileDescriptors',
  'processResources', 'processHandles', 'processRequests', 'heapSizeAndUsed', 'heapSpacesSizeAndUsed', 'version', 'gc',
] as const;

type DefaultMetric = (registry: Registry, config: Record<string, unknown>) => void;

export function collectDefaultMetrics(registry: Registry): void {
  const require = createRequire(import.meta.url);
  for (const name of PROM_DEFAULTS) {
    // processResources needs process.getActiveResourcesInfo (Node ≥ 17), as prom-client checks
    if (name === 'processResources' && typeof (process as { getActiveResourcesInfo?: unknown }).getActiveResourcesInfo !== 'function') continue;
    (require(`prom-client/lib/metrics/${name}`) as DefaultMetric)(registry, {});
  }
  eventLoopLag(registry);
  eventLoopUtilization(registry);
}

/**
 * How busy the front's thread was since the previous scrape. The front is one
 * thread; near 1 it is the bottleneck (measured: 0.95-0.98 under an overload
 * flood).
 */
function eventLoopUtilization(registry: Registry): void {
  const busyShare = busyShareMeter();
  new Gauge({
    name: 'logbook_front_event_loop_utilization',
    help: 'Share of the time since the previous scrape that the front thread (HTTP, routing, replies) was working rather than waiting for I/O; near 1 it is the bottleneck.',
    registers: [registry],
    collect() { this.set(busyShare()); },
  });
}

function eventLoopLag(registry: Registry): void {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  const gauge = (name: string, help: string): Gauge => new Gauge({ name, help, registers: [registry] });
  // prom-client's: the delay of a setImmediate at scrape time, reported by the next scrape
  const lag = new Gauge({
    name: 'nodejs_eventloop_lag_seconds', help: 'Lag of event loop in seconds.', registers: [registry],
    collect() {
      const start = process.hrtime.bigint();
      setImmediate(() => lag.set(Number(process.hrtime.bigint() - start) / 1e9));
      if (histogram.count === 0) return; // no sample since the last scrape: keep its values
      // prom-client's values include its 10 ms interval; these are the delay alone
      const late = (ns: number): number => delayBeyondMs(ns, RESOLUTION_MS) / 1e3;
      min.set(late(histogram.min));
      max.set(late(histogram.max));
      mean.set(late(histogram.mean));
      stddev.set(histogram.stddev / 1e9);
      p50.set(late(histogram.percentile(50)));
      p90.set(late(histogram.percentile(90)));
      p99.set(late(histogram.percentile(99)));
      histogram.reset();
    },
  });
  const min = gauge('nodejs_eventloop_lag_min_seconds', 'The minimum recorded event loop delay.');
  const max = gauge('nodejs_eventloop_lag_max_seconds', 'The maximum recorded event loop delay.');
  const mean = gauge('nodejs_eventloop_lag_mean_seconds', 'The mean of the recorded event loop delays.');
  const stddev = gauge('nodejs_eventloop_lag_stddev_seconds', 'The standard deviation of the recorded event loop delays.');
  const p50 = gauge('nodejs_eventloop_lag_p50_seconds', 'The 50th percentile of the recorded event loop delays.');
  const p90 = gauge('nodejs_eventloop_lag_p90_seconds', 'The 90th percentile of the recorded event loop delays.');
  const p99 = gauge('nodejs_eventloop_lag_p99_seconds', 'The 99th percentile of the recorded event loop delays.');
}
