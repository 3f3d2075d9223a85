/**
 * Validates the options of `createSignalServer` and fills in the defaults.
 * A misspelt or out-of-range option is a `TypeError` at start-up.
 *
 * @module
 */

import { DEFAULT_MAX_BLOB_BYTES } from "./create_pod.ts";
import { jsonLogger, type Logger } from "./log.ts";
import { assertSafeSandbox } from "./pod_headers.ts";
import type {
  PodHeaderOptions,
  Registry,
  SignalingOptions,
  SignalServerOptions,
} from "./types.ts";

/** Defaults of the signaling limits (DESIGN section 4). */
export const DEFAULT_SIGNALING = {
  maxFrameBytes: 65_536,
  maxPeersPerSession: 32,
  maxSockets: 10_000,
  joinTimeoutMs: 10_000,
  rateLimitBurst: 100,
  rateLimitPerSecond: 50,
  pingIntervalMs: 30_000,
} as const;

/** Signaling options with every default applied. */
export type ResolvedSignalingOptions =
  & { -readonly [K in keyof typeof DEFAULT_SIGNALING]: number }
  & { allowedOrigins: string[] | null };

/** Server options with every default applied. */
export interface ResolvedOptions {
  /** The registry. */
  registry: Registry;
  /** Port to listen on. */
  port: number;
  /** Address to listen on. */
  hostname: string;
  /** Public base URL without a trailing slash, or null for the request's origin. */
  baseUrl: string | null;
  /** Whether X-Forwarded-* are honoured. */
  trustProxy: boolean;
  /** Upload limit in bytes. */
  maxBlobBytes: number;
  /** Pod header overrides. */
  podHeaderOptions: PodHeaderOptions;
  /** Signaling limits. */
  signaling: ResolvedSignalingOptions;
  /** Log sink. */
  logger: Logger;
}

const TOP_LEVEL = new Set([
  "registry",
  "port",
  "hostname",
  "baseUrl",
  "trustProxy",
  "maxBlobBytes",
  "podHeaderOptions",
  "signaling",
  "logger",
]);
const POD_HEADER_KEYS = new Set(["csp", "permissionsPolicy", "sandbox"]);
const SIGNALING_KEYS = new Set([
  ...Object.keys(DEFAULT_SIGNALING),
  "allowedOrigins",
]);

/**
 * Checks `options` and applies the defaults.
 *
 * @param options What the caller passed.
 * @returns The complete options.
 * @throws {TypeError} Naming the first unknown, missing or out-of-range option.
 */
export function resolveOptions(options: SignalServerOptions): ResolvedOptions {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("Cannot start the broker: options must be an object");
  }
  checkKeys(options, TOP_LEVEL, "");
  const registry = options.registry;
  for (
    const method of ["putPod", "getRecord", "getBlob", "bumpHits"] as const
  ) {
    if (typeof registry?.[method] !== "function") {
      throw new TypeError(
        `Cannot start the broker: option 'registry' must be a Registry with ${method}()`,
      );
    }
  }
  const podHeaderOptions = { ...options.podHeaderOptions };
  checkKeys(podHeaderOptions, POD_HEADER_KEYS, "podHeaderOptions.");
  for (const [key, value] of Object.entries(podHeaderOptions)) {
    if (typeof value !== "string") {
      fail(`podHeaderOptions.${key}`, "must be a string");
    }
  }
  if (podHeaderOptions.sandbox !== undefined) {
    assertSafeSandbox(podHeaderOptions.sandbox);
  }
  const signaling = { ...options.signaling };
  checkKeys(signaling, SIGNALING_KEYS, "signaling.");
  return {
    registry,
    port: integer("port", options.port ?? 8080, 0, 65_535),
    hostname: string("hostname", options.hostname ?? "0.0.0.0"),
    baseUrl: options.baseUrl === undefined ? null : baseUrl(options.baseUrl),
    trustProxy: boolean("trustProxy", options.trustProxy ?? false),
    maxBlobBytes: integer(
      "maxBlobBytes",
      options.maxBlobBytes ?? DEFAULT_MAX_BLOB_BYTES,
      1,
      Number.MAX_SAFE_INTEGER,
    ),
    podHeaderOptions,
    signaling: resolveSignaling(signaling),
    logger: options.logger ?? jsonLogger,
  };
}

function resolveSignaling(options: SignalingOptions): ResolvedSignalingOptions {
  const resolved = {
    ...DEFAULT_SIGNALING,
    allowedOrigins: null,
  } as ResolvedSignalingOptions;
  for (
    const key of Object.keys(
      DEFAULT_SIGNALING,
    ) as (keyof typeof DEFAULT_SIGNALING)[]
  ) {
    const value = options[key];
    if (value !== undefined) {
      resolved[key] = integer(
        `signaling.${key}`,
        value,
        1,
        Number.MAX_SAFE_INTEGER,
      );
    }
  }
  if (resolved.maxFrameBytes < 16) {
    fail("signaling.maxFrameBytes", "must be at least 16");
  }
  const origins = options.allowedOrigins;
  if (origins !== undefined) {
    if (
      !Array.isArray(origins) ||
      origins.some((o) => typeof o !== "string" || o === "")
    ) {
      fail("signaling.allowedOrigins", "must be an array of origins");
    }
    resolved.allowedOrigins = [...origins];
  }
  return resolved;
}

function checkKeys(object: object, allowed: Set<string>, prefix: string): void {
  for (const key of Object.keys(object)) {
    if (!allowed.has(key)) {
      throw new TypeError(
        `Cannot start the broker: unknown option '${prefix}${key}'`,
      );
    }
  }
}

function integer(
  name: string,
  value: unknown,
  min: number,
  max: number,
): number {
  if (
    !Number.isSafeInteger(value) || (value as number) < min ||
    (value as number) > max
  ) {
    fail(name, `must be an integer from ${min} to ${max}`);
  }
  return value as number;
}

function string(name: string, value: unknown): string {
  if (typeof value !== "string" || value === "") {
    fail(name, "must be a non-empty string");
  }
  return value as string;
}

function boolean(name: string, value: unknown): boolean {
  if (typeof value !== "boolean") fail(name, "must be a boolean");
  return value as boolean;
}

function baseUrl(value: unknown): string {
  let url: URL | undefined;
  try {
    url = new URL(string("baseUrl", value));
  } catch { /* reported below */ }
  if (
    !url || (url.protocol !== "http:" && url.protocol !== "https:") ||
    url.search || url.hash
  ) {
    fail("baseUrl", "must be an http(s) URL without query or fragment");
  }
  return url!.href.replace(/\/+$/, "");
}

function fail(name: string, reason: string): never {
  throw new TypeError(`Cannot start the broker: option '${name}' ${reason}`);
}
