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
import { AccessLineBatch, type AccessLogEntry } from "./access_line.ts";
import { onExit, onStdoutError, writeStdout } from "../_util/host.ts";

export type { AccessLogEntry };

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
  return lineText(entry, true);
}

/** The line of `entry` as a string, without its newline. */
function lineText(entry: AccessLogEntry, withIp: boolean): string {
  const batch = new AccessLineBatch(LINE_BYTES);
  batch.add(entry, withIp);
  return decoder.decode(batch.take()).slice(0, -1);
}

const decoder = new TextDecoder();
/** Bytes a line usually fits in. */
const LINE_BYTES = 512;

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
 * Lines wait up to this long, so that a busy broker writes a batch at a
 * time instead of a line per request (a write per line cost about a third
 * of the CPU of serving a small pod).
 */
const FLUSH_MS = 50;
/** ... or until this many bytes are waiting (a few hundred lines). */
const FLUSH_BYTES = 60 * 1024;

/**
 * The default sink's lines, waiting: each line with a newline on standard
 * output (the broker's diagnostic log is on standard error, so the two can
 * be routed apart).
 */
let waiting: AccessLineBatch | undefined;
let stdoutGone = false;
/** When lines were last written (`performance.now()`). */
let lastFlush = Number.NEGATIVE_INFINITY;

function toStdout(entry: AccessLogEntry, withIp: boolean): void {
  if (stdoutGone) return;
  if (waiting === undefined) {
    waiting = new AccessLineBatch(FLUSH_BYTES + LINE_BYTES);
    // A closed standard output (a pipe whose reader went away) must not
    // take the broker down: the access log stops, the broker goes on. What
    // waits is written when the process exits.
    onStdoutError(() => {
      stdoutGone = true;
    });
    onExit(flushAccessLog);
  }
  const first = waiting.size === 0;
  waiting.add(entry, withIp);
  if (waiting.size >= FLUSH_BYTES) flushAccessLog();
  else if (first) {
    // A line after a quiet spell goes at once (no timer: on Deno the first
    // one loads the runtime's timers, about 10 ms of a start's first
    // request); those that follow it within FLUSH_MS wait for the batch.
    if (performance.now() - lastFlush >= FLUSH_MS) flushAccessLog();
    else setTimeout(flushAccessLog, FLUSH_MS);
  }
}

function flushAccessLog(): void {
  lastFlush = performance.now();
  if (!waiting?.size || stdoutGone) return;
  try {
    writeStdout(waiting.take());
  } catch {
    stdoutGone = true;
  }
}

/** Options of {@linkcode createAccessLog}. */
export interface AccessLogOptions {
  /**
   * Where lines go. @default {each line with a newline on standard output,
   * written in batches}
   */
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
  const { sink } = options;
  const includeIp = options.includeIp ?? false;
  return (entry) => {
    try {
      if (sink === undefined) toStdout(entry, includeIp);
      else sink(lineText(entry, includeIp));
    } catch {
      // Losing a log line is better than failing the request it describes.
    }
  };
}
