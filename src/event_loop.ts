// Two readings of the front thread's event loop, shared by /metrics
// (src/default_metrics.ts) and the overload `shedding` line (src/http/admission.ts).
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

/**
 * A value (ns) of a monitorEventLoopDelay histogram → ms of delay: Node records
 * the time between two samples, the sampling interval included.
 */
export function delayBeyondMs(ns: number, resolutionMs: number): number {
  return Math.max(0, ns / 1e6 - resolutionMs);
}

/**
 * A meter of the loop's busy share since its previous reading (Node's
 * event-loop utilization: the time not spent waiting for I/O, uWS's native
 * HTTP work included, which a CPU profile counts as idle).
 */
export function busyShareMeter(): () => number {
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const share = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return share;
  };
}
