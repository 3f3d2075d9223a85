/**
 * The broker's Prometheus metrics: counters, gauges and histograms that the
 * core and the adapters feed through the methods of {@linkcode Metrics}, and
 * {@linkcode Metrics.render}, the text exposition format 0.0.4 that a
 * separate listener serves to Prometheus.
 *
 * Written by hand rather than with prom-client: on Deno 2.9 its event-loop
 * lag (from `perf_hooks.monitorEventLoopDelay`) reads under a millisecond
 * after a 300 ms block, its default metrics carry `nodejs_` names, and its
 * index loads `node:cluster`; what the broker needs is a few counters and
 * histograms, which the format makes small. Event-loop delay is measured
 * here with a timer-drift sampler, the same on both runtimes.
 *
 * Names follow Prometheus practice: a `pod_broker_` prefix, `_total` on
 * counters, base units (`_seconds`, `_bytes`), and labels with a bounded set
 * of values: route patterns (`/:id`, never a path or a pod id), methods,
 * statuses and known codes, anything else counted as `other`. The process
 * metrics keep their standard unprefixed names (`process_resident_memory_bytes`,
 * `process_start_time_seconds`), as dashboards expect.
 *
 * @module
 */

import { residentBytes, unrefTimer } from "../_util/host.ts";
import { isKnownCloseCode } from "../signaling/close.ts";
import { SIGNAL_ERROR_CODES } from "../signaling/messages.ts";
import type { SignalingObserver } from "../signaling/types.ts";
import type { CompatObserver } from "../signaling/compat/base.ts";
import type { CompatDialect } from "../signaling/compat/limits.ts";
import {
  CompatMetrics,
  type CompatSocketCounts,
  renderCompatSockets,
} from "./compat_metrics.ts";
import { VERSION } from "../version.ts";
import {
  Counter,
  escapeLabel,
  gauge,
  header,
  Histogram,
} from "./prometheus.ts";

/** The `Content-Type` of {@linkcode Metrics.render}'s text. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Request duration buckets, in seconds (uploads may take a while). */
export const REQUEST_DURATION_BUCKETS: readonly number[] = [
  0.001,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
];

/** Event-loop delay buckets, in seconds. */
export const EVENT_LOOP_DELAY_BUCKETS: readonly number[] = [
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
];

const METHODS = new Set(["GET", "HEAD", "POST", "OPTIONS", "PUT", "DELETE"]);

const SIGNALING_ERROR_CODES = new Set<string>(SIGNAL_ERROR_CODES);

export type { CompatObserver, SignalingObserver };

/** Live figures read at each scrape (the hub's `stats`). */
export interface MetricsStats {
  /** Open WebSockets, joined or not. */
  sockets: number;
  /** Sessions with at least one peer. */
  sessions: number;
  /** Joined peers. */
  peers: number;
  /** Open sockets of each dialect that is on (`/y-webrtc`, `/peerjs`). */
  compat?: CompatSocketCounts;
}

/** Options of {@linkcode Metrics}. */
export interface MetricsOptions {
  /**
   * Reads the live socket, session and peer counts at each scrape, such as
   * `() => hub.counts`. Absent, those gauges are not reported.
   */
  stats?: () => MetricsStats;
  /**
   * Allowed values of the `route` label: the broker passes its route
   * table's patterns. Any other route is counted as `other`, so a raw path
   * passed by mistake cannot grow the series.
   * @default {[]}
   */
  routes?: readonly string[];
  /**
   * Allowed values of the `code` label of refused uploads and updates: the
   * broker passes its problem codes. Any other code is counted as `other`.
   * @default {[]}
   */
  problemCodes?: Iterable<string>;
  /**
   * How often the event-loop delay is sampled, in milliseconds; 0 turns
   * the sampler (and its timer) off.
   * @default {100}
   */
  eventLoopSampleMs?: number;
}

/** One answered HTTP request, for {@linkcode Metrics.request}. */
export interface RequestSample {
  /**
   * The route pattern that matched (`/:id`), or null when none did
   * (counted as `unmatched`).
   */
  route: string | null;
  /** The request method. */
  method: string;
  /** The response status. */
  status: number;
  /** From the request's arrival to the response, in seconds. */
  durationSeconds: number;
  /** Request body bytes received (0 or absent when none). */
  bytesIn?: number | undefined;
  /** Response body bytes sent, when known (`Content-Length`). */
  bytesOut?: number | undefined;
}

/**
 * The broker's metrics. The core calls {@linkcode Metrics.request} once
 * per answered request and the upload/pod/hub methods as events happen;
 * adapters call {@linkcode Metrics.socketClosed}; a metrics listener answers
 * with {@linkcode Metrics.render}. Call {@linkcode Metrics.close} to stop
 * the event-loop sampler.
 *
 * @example Count and render
 * ```ts
 * import assert from "node:assert/strict";
 * import { Metrics } from "./metrics.ts";
 *
 * using metrics = new Metrics({
 *   eventLoopSampleMs: 0,
 *   routes: ["/:id"],
 *   problemCodes: ["signature_invalid"],
 * });
 * metrics.request({ route: "/:id", method: "GET", status: 200, durationSeconds: 0.002, bytesOut: 512 });
 * metrics.uploadRefused("signature_invalid");
 * const text = metrics.render();
 * assert.match(text, /^pod_broker_http_requests_total\{route="\/:id",method="GET",status="200"\} 1$/m);
 * assert.match(text, /^pod_broker_uploads_refused_total\{code="signature_invalid"\} 1$/m);
 * ```
 */
export class Metrics implements Disposable, SignalingObserver, CompatObserver {
  #routes: Set<string>;
  #problemCodes: ReadonlySet<string>;
  #stats: (() => MetricsStats) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  #requests = new Counter(
    "pod_broker_http_requests_total",
    "HTTP requests answered, by route pattern, method and status.",
    ["route", "method", "status"],
  );
  #duration = new Histogram(
    "pod_broker_http_request_duration_seconds",
    "Time from a request's arrival to its response head, by route pattern.",
    REQUEST_DURATION_BUCKETS,
    ["route"],
  );
  #bytesIn = new Counter(
    "pod_broker_http_received_bytes_total",
    "Request body bytes received, by route pattern.",
    ["route"],
  );
  #bytesOut = new Counter(
    "pod_broker_http_sent_bytes_total",
    "Response body bytes sent (as announced by Content-Length), by route pattern.",
    ["route"],
  );
  #uploadsAccepted = new Counter(
    "pod_broker_uploads_accepted_total",
    "Pods accepted by POST /pods.",
  );
  #uploadsRefused = new Counter(
    "pod_broker_uploads_refused_total",
    "Uploads refused, by problem code.",
    ["code"],
  );
  #updatesAccepted = new Counter(
    "pod_broker_updates_accepted_total",
    "Pods replaced by PUT /:id.",
  );
  #updatesRefused = new Counter(
    "pod_broker_updates_refused_total",
    "Updates (PUT /:id) refused, by problem code.",
    ["code"],
  );
  #podHits = new Counter(
    "pod_broker_pod_hits_total",
    "Pods served with 200 (the hits counted in the registry).",
  );
  #signals = new Counter(
    "pod_broker_signals_relayed_total",
    "Signal frames relayed to a peer.",
  );
  #signalingErrors = new Counter(
    "pod_broker_signaling_errors_total",
    "Error frames sent on signaling sockets, by code.",
    ["code"],
  );
  #closes = new Counter(
    "pod_broker_socket_closes_total",
    "Signaling WebSockets closed, by close code.",
    ["code"],
  );
  #compat = new CompatMetrics();
  /** Every counter, in the order they are rendered (requests first). */
  readonly #counters: readonly Counter[] = [
    this.#requests,
    this.#bytesIn,
    this.#bytesOut,
    this.#uploadsAccepted,
    this.#uploadsRefused,
    this.#updatesAccepted,
    this.#updatesRefused,
    this.#podHits,
    this.#signals,
    this.#signalingErrors,
    this.#closes,
    this.#compat.relayed,
    this.#compat.refused,
  ];
  #eventLoop = new Histogram(
    "pod_broker_event_loop_delay_seconds",
    "How late the event loop ran a timer (sampled), a measure of blocking.",
    EVENT_LOOP_DELAY_BUCKETS,
  );

  /**
   * Makes the metrics and starts the event-loop sampler.
   *
   * @param options Where the live gauges come from, the route labels and the
   * sampling interval.
   * @throws {RangeError} For a negative or non-integer sampling interval.
   */
  constructor(options: MetricsOptions = {}) {
    this.#routes = new Set();
    this.#problemCodes = new Set(options.problemCodes ?? []);
    this.watch(options);
    const every = options.eventLoopSampleMs ?? 100;
    if (!Number.isSafeInteger(every) || every < 0) {
      throw new RangeError(
        `Cannot sample the event loop every '${every}' ms: expected a non-negative integer`,
      );
    }
    if (every > 0) this.#sample(every);
  }

  // Timer drift: a timer set for `every` ms that fires late was held up by
  // work on the event loop (perf_hooks.monitorEventLoopDelay is not usable
  // on Deno). The timer is unref'd so that it never keeps a process alive.
  #sample(every: number): void {
    const armed = performance.now();
    this.#timer = setTimeout(() => {
      if (this.#closed) return;
      const late = performance.now() - armed - every;
      this.#eventLoop.observe(Math.max(0, late) / 1000);
      this.#sample(every);
    }, every);
    unrefTimer(this.#timer);
  }

  /**
   * Adds the route labels and the source of the live gauges, for a broker
   * that makes its metrics before its routes and hubs (which report to
   * them) and then shows them what to read.
   *
   * @param source The route table's patterns and the live counts.
   */
  watch(source: Pick<MetricsOptions, "routes" | "stats">): void {
    for (const route of source.routes ?? []) this.#routes.add(route);
    this.#stats = source.stats ?? this.#stats;
  }

  /**
   * Records one answered request.
   *
   * @param sample Its route pattern, method, status, duration and bytes.
   */
  request(sample: RequestSample): void {
    const route = this.#route(sample.route);
    const method = METHODS.has(sample.method) ? sample.method : "other";
    const status = Number.isInteger(sample.status) && sample.status >= 100 &&
        sample.status <= 599
      ? String(sample.status)
      : "other";
    this.#requests.inc({ route, method, status });
    this.#duration.observe(sample.durationSeconds, { route });
    if (sample.bytesIn) this.#bytesIn.inc({ route }, sample.bytesIn);
    if (sample.bytesOut) this.#bytesOut.inc({ route }, sample.bytesOut);
  }

  /** Records a pod accepted by `POST /pods`. */
  uploadAccepted(): void {
    this.#uploadsAccepted.inc();
  }

  /**
   * Records a refused upload.
   *
   * @param code Its problem code (`signature_invalid`, `busy`, ...).
   */
  uploadRefused(code: string): void {
    this.#uploadsRefused.inc({
      code: this.#problemCodes.has(code) ? code : "other",
    });
  }

  /** Records a pod replaced by `PUT /:id`. */
  updateAccepted(): void {
    this.#updatesAccepted.inc();
  }

  /**
   * Records a refused update.
   *
   * @param code Its problem code (`stale_update`, `owner_mismatch`, ...).
   */
  updateRefused(code: string): void {
    this.#updatesRefused.inc({
      code: this.#problemCodes.has(code) ? code : "other",
    });
  }

  /** Records a pod served with 200. */
  podHit(): void {
    this.#podHits.inc();
  }

  /** Records a signal frame relayed to its addressee. */
  signal(): void {
    this.#signals.inc();
  }

  /**
   * Records an error frame sent on a signaling socket.
   *
   * @param code Its code (`bad_json`, `rate_limited`, ...).
   */
  signalingError(code: string): void {
    this.#signalingErrors.inc({
      code: SIGNALING_ERROR_CODES.has(code) ? code : "other",
    });
  }

  /** Records frames a dialect (`y-webrtc`, `peerjs`) relayed to sockets. */
  compatRelayed(dialect: CompatDialect, frames: number): void {
    this.#compat.relay(dialect, frames);
  }

  /** Records a frame or connection a dialect refused, by its code. */
  compatRefused(dialect: CompatDialect, code: string): void {
    this.#compat.refuse(dialect, code);
  }

  /**
   * Records a closed signaling WebSocket.
   *
   * @param code The close code the adapter saw (1000, 1001, 1006, ...).
   */
  socketClosed(code: number): void {
    this.#closes.inc({
      code: isKnownCloseCode(code) ? String(code) : "other",
    });
  }

  /**
   * The metrics in the Prometheus text exposition format 0.0.4 (serve it
   * with {@linkcode METRICS_CONTENT_TYPE}).
   *
   * @returns The exposition text, ending in a newline.
   */
  render(): string {
    const out: string[] = [];
    header(
      out,
      "pod_broker_build_info",
      "The broker's version; always 1.",
      "gauge",
    );
    out.push(`pod_broker_build_info{version="${escapeLabel(VERSION)}"} 1`);
    this.#requests.render(out);
    this.#duration.render(out);
    for (const counter of this.#counters.slice(1)) counter.render(out);
    if (this.#stats !== undefined) {
      const stats = this.#stats();
      gauge(
        out,
        "pod_broker_sockets",
        "Open signaling WebSockets.",
        stats.sockets,
      );
      gauge(
        out,
        "pod_broker_sessions",
        "Signaling sessions with at least one peer.",
        stats.sessions,
      );
      gauge(out, "pod_broker_peers", "Joined signaling peers.", stats.peers);
      if (stats.compat) renderCompatSockets(out, stats.compat);
    }
    this.#eventLoop.render(out);
    gauge(
      out,
      "process_resident_memory_bytes",
      "Resident memory size in bytes.",
      residentBytes(),
    );
    gauge(
      out,
      "process_start_time_seconds",
      "Start time of the process since the Unix epoch in seconds.",
      Math.round(performance.timeOrigin) / 1000,
    );
    return `${out.join("\n")}\n`;
  }

  /**
   * A counter's current value, for tests and health checks.
   *
   * @param name The metric's name, such as `pod_broker_uploads_accepted_total`.
   * @param labels Its labels, such as `{ code: "busy" }`.
   * @returns The value, 0 for a series not seen yet.
   * @throws {RangeError} For a name that is not one of the counters.
   */
  counter(name: string, labels: Record<string, string> = {}): number {
    const counter = this.#counters.find((c) => c.name === name);
    if (counter === undefined) {
      throw new RangeError(`Cannot find a counter named '${name}'`);
    }
    return counter.get(labels);
  }

  /** Stops the event-loop sampler. Idempotent. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Same as {@linkcode Metrics.close}, for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }

  #route(route: string | null): string {
    if (route === null) return "unmatched";
    return this.#routes.has(route) ? route : "other";
  }
}
