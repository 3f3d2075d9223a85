/**
 * The bytes of access log lines, written field by field into one growing
 * batch: no string is made per line (the ISO time and each route's JSON are
 * kept as bytes and reused), so a busy broker's log costs it a copy per
 * line rather than a string, a join and an encoding.
 *
 * @module
 */

/** One answered request, as an access log line tells of it. */
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

const encoder = new TextEncoder();

/** The ASCII bytes of a literal part of the line. */
const ascii = (text: string) => encoder.encode(text);

const TIME = ascii('{"time":"');
const METHOD_KEY = ascii('","method":"');
const ROUTE_KEY = ascii('","route":');
const STATUS_KEY = ascii(',"status":');
const BYTES_KEY = ascii(',"bytes":');
const DURATION_KEY = ascii(',"durationMs":');
const POD_ID_KEY = ascii(',"podId":');
const IP_KEY = ascii(',"ip":');
const NULL = ascii("null");
const OTHER = ascii("OTHER");
const END = ascii("}\n");

/**
 * The most bytes a line takes besides its route and address: the literal
 * parts, the time (24), a method (16), a pod id in quotes (14) and three
 * numbers of at most 24 characters each.
 */
const FIXED_MAX = [
  TIME,
  METHOD_KEY,
  ROUTE_KEY,
  STATUS_KEY,
  BYTES_KEY,
  DURATION_KEY,
  POD_ID_KEY,
  IP_KEY,
  END,
].reduce((sum, part) => sum + part.length, 24 + 16 + 14 + 3 * 24);

/** The JSON of each route seen (a handful: the route table's patterns). */
const routeJson = new Map<string, Uint8Array>();
const ROUTE_JSON_MAX = 64;

function jsonOfRoute(route: string | null): Uint8Array {
  if (route === null) return NULL;
  let json = routeJson.get(route);
  if (json === undefined) {
    json = encoder.encode(JSON.stringify(route.split(/[?#]/)[0]));
    if (routeJson.size < ROUTE_JSON_MAX) routeJson.set(route, json);
  }
  return json;
}

/** The ISO time of the last millisecond written, reused within it. */
let lastMs = Number.NaN;
let lastIso = new Uint8Array(0);
function isoTime(time: number): Uint8Array {
  const ms = Math.floor(time);
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = ascii(new Date(ms).toISOString());
  }
  return lastIso;
}

/**
 * Access log lines as bytes: each {@linkcode add} appends one JSON line and
 * its newline; {@linkcode take} hands a copy of the batch over and empties
 * it.
 *
 * @example Two lines
 * ```ts
 * import assert from "node:assert/strict";
 * import { AccessLineBatch } from "./access_line.ts";
 *
 * const batch = new AccessLineBatch(64);
 * const line = { time: 0, method: "GET", route: "/health", status: 200, bytes: 2, durationMs: 0.5 };
 * batch.add(line, false);
 * batch.add({ ...line, status: 503 }, false);
 * const text = new TextDecoder().decode(batch.take());
 * assert.deepEqual(text.trimEnd().split("\n").map((l) => JSON.parse(l).status), [200, 503]);
 * assert.equal(batch.size, 0);
 * ```
 */
export class AccessLineBatch {
  #bytes: Uint8Array;
  #used = 0;

  /** @param capacity The bytes a batch starts with (it grows as needed). */
  constructor(capacity: number) {
    this.#bytes = new Uint8Array(capacity);
  }

  /** Bytes waiting. */
  get size(): number {
    return this.#used;
  }

  /**
   * Appends the line of `entry`: `time` (RFC 3339 UTC), `method`, `route`,
   * `status`, `bytes`, `durationMs` (to the microsecond), `podId` and, with
   * `withIp` and an address, `ip`. A method that is not a short token is
   * written `OTHER`, a pod id of another shape and a number that is not one
   * `null`.
   */
  add(entry: AccessLogEntry, withIp: boolean): void {
    const route = jsonOfRoute(entry.route);
    const ip = withIp && typeof entry.ip === "string"
      ? encoder.encode(JSON.stringify(entry.ip))
      : null;
    this.#reserve(FIXED_MAX + route.length + (ip === null ? 0 : ip.length));
    const bytes = this.#bytes;
    let at = this.#used;
    at = put(bytes, at, TIME);
    at = put(bytes, at, isoTime(Number(entry.time)));
    at = put(bytes, at, METHOD_KEY);
    at = METHOD.test(entry.method)
      ? putAscii(bytes, at, entry.method)
      : put(bytes, at, OTHER);
    at = put(bytes, at, ROUTE_KEY);
    at = put(bytes, at, route);
    at = put(bytes, at, STATUS_KEY);
    at = putCount(bytes, at, entry.status);
    at = put(bytes, at, BYTES_KEY);
    at = putCount(bytes, at, entry.bytes);
    at = put(bytes, at, DURATION_KEY);
    at = putMilliseconds(bytes, at, entry.durationMs);
    at = put(bytes, at, POD_ID_KEY);
    if (typeof entry.podId === "string" && POD_ID.test(entry.podId)) {
      bytes[at++] = QUOTE;
      at = putAscii(bytes, at, entry.podId);
      bytes[at++] = QUOTE;
    } else {
      at = put(bytes, at, NULL);
    }
    if (ip !== null) at = put(bytes, put(bytes, at, IP_KEY), ip);
    this.#used = put(bytes, at, END);
  }

  /** A copy of the lines written since the last call, which it empties. */
  take(): Uint8Array {
    const taken = this.#bytes.slice(0, this.#used);
    this.#used = 0;
    return taken;
  }

  #reserve(bytes: number): void {
    if (this.#used + bytes <= this.#bytes.length) return;
    const grown = new Uint8Array(
      Math.max(2 * this.#bytes.length, this.#used + bytes),
    );
    grown.set(this.#bytes.subarray(0, this.#used));
    this.#bytes = grown;
  }
}

const QUOTE = 0x22;
const ZERO = 0x30;

function put(bytes: Uint8Array, at: number, part: Uint8Array): number {
  for (let i = 0; i < part.length; i++) bytes[at + i] = part[i]!;
  return at + part.length;
}

/** Writes `text`, checked to be ASCII by its caller. */
function putAscii(bytes: Uint8Array, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) bytes[at + i] = text.charCodeAt(i);
  return at + text.length;
}

/** Writes a whole number from 0 up, as JSON does; anything else as null. */
function putCount(bytes: Uint8Array, at: number, value: number | null): number {
  if (value === null || !Number.isSafeInteger(value) || value < 0) {
    return put(bytes, at, NULL);
  }
  let end = at;
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) end++;
  for (let i = end, rest = value; i >= at; i--, rest = Math.floor(rest / 10)) {
    bytes[i] = ZERO + rest % 10;
  }
  return end + 1;
}

/**
 * Writes milliseconds rounded to the microsecond as JSON writes
 * `Math.round(ms * 1000) / 1000`: the whole part, then up to three
 * decimals without trailing zeros.
 */
function putMilliseconds(bytes: Uint8Array, at: number, ms: number): number {
  const micros = Math.round(ms * 1000);
  if (!Number.isSafeInteger(micros) || micros < 0) {
    return Number.isFinite(ms)
      ? putAscii(bytes, at, String(micros / 1000))
      : put(bytes, at, NULL);
  }
  at = putCount(bytes, at, Math.floor(micros / 1000));
  let fraction = micros % 1000;
  if (fraction === 0) return at;
  bytes[at++] = 0x2e; // "."
  for (let unit = 100; fraction > 0; unit /= 10) {
    const digit = Math.floor(fraction / unit);
    bytes[at++] = ZERO + digit;
    fraction -= digit * unit;
  }
  return at;
}
