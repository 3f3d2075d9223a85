/**
 * The access log: one JSON line per answered request with its time,
 * method, route pattern, status, response bytes, duration and pod id. It
 * never carries a query string, a raw path or a header; the client's
 * address appears only when the operator asks for it (the `ip` field is
 * written only when given).
 *
 * @module
 */

import { lastListValue } from "../_util/text.ts";
import { onExit, onStdoutError, writeStdout } from "../_util/host.ts";

/** One answered request, for {@linkcode formatAccessLine}. */
export interface AccessLogEntry {
  /** When the request arrived: a `Date` or milliseconds since the epoch. */
  time: Date | number;
  /** The request method. */
  method: string;
  /**
   * The route pattern that matched (`/:id`), or null when none did. A query
   * string, if one is passed by mistake, is cut off.
   */
  route: string | null;
  /** The response status. */
  status: number;
  /** Response body bytes (`Content-Length`), or null when not known. */
  bytes: number | null;
  /** From the request's arrival to the response, in milliseconds. */
  durationMs: number;
  /**
   * The pod id of `/:id` and `/:id/meta` routes; written only when it has
   * a pod id's shape (12 characters of `[A-Za-z0-9]`), else null.
   */
  podId?: string | null | undefined;
  /** The client's address, only when the operator asked for it. */
  ip?: string | undefined;
}

const POD_ID = /^[A-Za-z0-9]{12}$/;
const METHOD = /^[A-Za-z]{1,16}$/;

/**
 * Formats one access log line: a JSON object with `time` (RFC 3339 UTC),
 * `method`, `route`, `status`, `bytes`, `durationMs` (to the microsecond),
 * `podId` and, only when given, `ip`; no newline.
 *
 * @param entry The request.
 * @returns One line of JSON.
 *
 * @example A pod served
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatAccessLine } from "./access_log.ts";
 *
 * const line = formatAccessLine({
 *   time: Date.UTC(2026, 10, 21, 12), method: "GET", route: "/:id",
 *   status: 200, bytes: 5120, durationMs: 1.23456, podId: "AbCdEf123456",
 * });
 * assert.equal(
 *   line,
 *   '{"time":"2026-11-21T12:00:00.000Z","method":"GET","route":"/:id","status":200,"bytes":5120,"durationMs":1.235,"podId":"AbCdEf123456"}',
 * );
 * ```
 */
export function formatAccessLine(entry: AccessLogEntry): string {
  return format(entry, true);
}

/** The JSON of each route seen (a handful: the route table's patterns). */
const routeJson = new Map<string, string>();
const ROUTE_JSON_MAX = 64;

function jsonOfRoute(route: string): string {
  let json = routeJson.get(route);
  if (json === undefined) {
    json = JSON.stringify(route.split(/[?#]/)[0]);
    if (routeJson.size < ROUTE_JSON_MAX) routeJson.set(route, json);
  }
  return json;
}

function format(entry: AccessLogEntry, withIp: boolean): string {
  // Written by hand (once per request): every value is a number, null, or a
  // string checked to need no escaping, except the route and the address,
  // which go through JSON.stringify.
  const time = isoTime(Number(entry.time));
  // Methods are tokens; anything else (or a very long one) is not echoed.
  const method = METHOD.test(entry.method) ? entry.method : "OTHER";
  const route = entry.route === null ? "null" : jsonOfRoute(entry.route);
  const podId = typeof entry.podId === "string" && POD_ID.test(entry.podId)
    ? `"${entry.podId}"`
    : "null";
  const durationMs = Math.round(entry.durationMs * 1000) / 1000;
  const ip = withIp && typeof entry.ip === "string"
    ? `,"ip":${JSON.stringify(entry.ip)}`
    : "";
  return `{"time":"${time}","method":"${method}","route":${route},"status":${
    Number(entry.status)
  },"bytes":${
    entry.bytes === null ? "null" : Number(entry.bytes)
  },"durationMs":${durationMs},"podId":${podId}${ip}}`;
}

/** The longest address written (an IPv6 address with a zone fits). */
const ADDRESS_MAX = 100;

/**
 * The address the access log writes for a request: the connection's peer,
 * or with `trustProxy` the last `X-Forwarded-For` hop, the one the proxy
 * appended (the ones before it are the client's word). Cut to 100
 * characters.
 *
 * @param peer The connection's remote address, when the adapter knows it.
 * @param forwardedFor The request's `X-Forwarded-For`, or null.
 * @param trustProxy Whether `X-Forwarded-*` headers are honoured.
 * @returns The address, or undefined when there is none.
 *
 * @example Behind a proxy
 * ```ts
 * import assert from "node:assert/strict";
 * import { clientAddress } from "./access_log.ts";
 *
 * assert.equal(clientAddress("10.0.0.2", "1.2.3.4, 192.0.2.7", true), "192.0.2.7");
 * assert.equal(clientAddress("10.0.0.2", "1.2.3.4, 192.0.2.7", false), "10.0.0.2");
 * ```
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | null,
  trustProxy: boolean,
): string | undefined {
  const hop = trustProxy ? lastListValue(forwardedFor) : undefined;
  if (hop !== undefined) return hop.slice(0, ADDRESS_MAX);
  return peer?.slice(0, ADDRESS_MAX);
}

/** Where access log lines go: one call per line, without its newline. */
export type AccessLogSink = (line: string) => void;

/**
 * The default sink: each line with a newline on standard output (the
 * broker's diagnostic log is on standard error, so the two can be routed
 * apart).
 *
 * @param line One formatted line.
 */
export function stdoutAccessLogSink(line: string): void {
  if (stdoutGone) return;
  if (!guarded) {
    // A closed standard output (a pipe whose reader went away) must not
    // take the broker down: the access log stops, the broker goes on. What
    // waits is written when the process exits.
    guarded = true;
    onStdoutError(() => {
      stdoutGone = true;
    });
    onExit(flushAccessLog);
  }
  pending.push(line);
  if (pending.length >= FLUSH_LINES) flushAccessLog();
  else if (pending.length === 1) {
    // A line after a quiet spell goes at once (no timer: on Deno the first
    // one loads the runtime's timers, about 10 ms of a start's first
    // request); those that follow it within FLUSH_MS wait for the batch.
    if (performance.now() - lastFlush >= FLUSH_MS) flushAccessLog();
    else setTimeout(flushAccessLog, FLUSH_MS);
  }
}

/**
 * Lines wait up to this long, so that a busy broker writes a batch at a
 * time instead of a line per request (a write per line cost about a third
 * of the CPU of serving a small pod).
 */
const FLUSH_MS = 50;
/** ... or until this many are waiting. */
const FLUSH_LINES = 512;

/** The ISO time of the last millisecond formatted, reused within it. */
let lastMs = Number.NaN;
let lastIso = "";
function isoTime(time: number): string {
  const ms = Math.floor(time);
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}

/** Lines not yet written. */
const pending: string[] = [];
let guarded = false;
let stdoutGone = false;
/** When lines were last written (`performance.now()`). */
let lastFlush = Number.NEGATIVE_INFINITY;

function flushAccessLog(): void {
  lastFlush = performance.now();
  if (pending.length === 0 || stdoutGone) return;
  const text = `${pending.join("\n")}\n`;
  pending.length = 0;
  try {
    writeStdout(text);
  } catch {
    stdoutGone = true;
  }
}

/** Options of {@linkcode createAccessLog}. */
export interface AccessLogOptions {
  /** Where lines go. @default {stdoutAccessLogSink} */
  sink?: AccessLogSink;
  /**
   * Whether the `ip` of an entry is written; off, it is dropped even when
   * given.
   * @default {false}
   */
  includeIp?: boolean;
}

/**
 * An access log: a function that formats an entry and hands the line to
 * the sink. A sink that throws (a closed pipe) never fails the request.
 *
 * @param options The sink and whether client addresses are written.
 * @returns The function the core calls once per answered request.
 *
 * @example Collect lines
 * ```ts
 * import assert from "node:assert/strict";
 * import { createAccessLog } from "./access_log.ts";
 *
 * const lines: string[] = [];
 * const log = createAccessLog({ sink: (line) => lines.push(line) });
 * log({ time: 0, method: "POST", route: "/pods", status: 201, bytes: 90, durationMs: 4, ip: "192.0.2.1" });
 * assert.equal(JSON.parse(lines[0]!).ip, undefined);
 * ```
 */
export function createAccessLog(
  options: AccessLogOptions = {},
): (entry: AccessLogEntry) => void {
  const sink = options.sink ?? stdoutAccessLogSink;
  const includeIp = options.includeIp ?? false;
  return (entry) => {
    try {
      sink(format(entry, includeIp));
    } catch {
      // Losing a log line is better than failing the request it describes.
    }
  };
}
