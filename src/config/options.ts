/**
 * The options of `createSignalServer`, in one table: each option's key, CLI
 * flag, kind, default, range and one-line help. `resolveOptions` validates
 * against it and fills in the defaults; the CLI builds its flags, `--help`
 * and conversions from it; the README's options table is generated from it
 * (`deno task docs`, checked by a test). Adding an option is one row here
 * plus its use.
 *
 * @module
 */

import {
  createIceServerSource,
  type IceServer,
  isIceUrl,
  isTurnUrl,
} from "../signaling/ice.ts";
import { jsonLogger, type Logger } from "../_util/log.ts";
import { type Bus, isBus } from "../signaling/bus/mod.ts";
import {
  assertSafeSandbox,
  DEFAULT_SANDBOX,
  scriptPolicyConflict,
} from "../serving/pod_headers.ts";
import { DenyList } from "../operator/deny_list.ts";
import type { PodHeaderOptions, SignalServerOptions } from "./types.ts";
import type { Registry } from "../registries/types.ts";

/** How an option's value is checked, and how its flag's text is read. */
export type OptionKind =
  | "integer"
  | "string"
  | "boolean"
  | "url"
  | "origins"
  | "iceServers"
  | "turnUrls"
  | "secret"
  | "registry"
  | "bus"
  | "logger"
  | "choice"
  | "denyList";

/** One row of {@linkcode OPTIONS}. */
export interface OptionSpec {
  /** Key path in the options object, such as `signaling.maxFrameBytes`. */
  readonly key: string;
  /** The CLI flag without dashes, or null when there is none. */
  readonly flag: string | null;
  /** Placeholder of the flag's value in `--help` (none for a switch). */
  readonly arg?: string;
  /** Whether the flag may be repeated (its values are collected). */
  readonly repeatable?: boolean;
  /** Environment variable read when the flag is not given. */
  readonly env?: string;
  /** How the value is checked. */
  readonly kind: OptionKind;
  /** The default, or undefined when the option has none. */
  readonly default?: unknown;
  /** How the default reads in docs, when it is not the value itself. */
  readonly defaultText?: string;
  /** Smallest allowed integer. */
  readonly min?: number;
  /** Largest allowed integer. */
  readonly max?: number;
  /** Whether the option must be given. */
  readonly required?: boolean;
  /** The allowed values of a `choice` option. */
  readonly choices?: readonly string[];
  /** One line of help. */
  readonly help: string;
}

const MAX = Number.MAX_SAFE_INTEGER;

/**
 * Every option of `createSignalServer`, once. Options under a group
 * (`podHeaderOptions`, `signaling`, `turn`) are written with their path.
 */
export const OPTIONS: readonly OptionSpec[] = [
  {
    key: "registry",
    flag: null,
    kind: "registry",
    required: true,
    defaultText: "required (CLI: `--registry`)",
    help: "where pods are kept: any object with the four Registry methods",
  },
  {
    key: "port",
    flag: "port",
    arg: "N",
    kind: "integer",
    default: 8080,
    min: 0,
    max: 65_535,
    help: "port to listen on; 0 picks a free one",
  },
  {
    key: "hostname",
    flag: "hostname",
    arg: "H",
    kind: "string",
    default: "0.0.0.0",
    help: "address to listen on",
  },
  {
    key: "baseUrl",
    flag: "base-url",
    arg: "URL",
    kind: "url",
    defaultText: "the request's origin",
    help: "public URL of pod links and of the signaling URL in the CSP",
  },
  {
    key: "trustProxy",
    flag: "trust-proxy",
    kind: "boolean",
    default: false,
    help: "honour X-Forwarded-Proto and X-Forwarded-Host (first value)",
  },
  {
    key: "maxBlobBytes",
    flag: "max-blob-bytes",
    arg: "N",
    kind: "integer",
    default: 52_428_800,
    min: 1,
    max: MAX,
    help: "upload limit in bytes (the default is 50 MiB)",
  },
  {
    key: "maxUploadBytesInFlight",
    flag: "max-upload-bytes-in-flight",
    arg: "N",
    kind: "integer",
    default: 268_435_456,
    min: 1,
    max: MAX,
    help:
      "upload bytes the broker holds at once (announced, or the limit for chunked uploads); past it 503 busy (the default is 256 MiB)",
  },
  {
    key: "uploadTimeoutMs",
    flag: "upload-timeout-ms",
    arg: "N",
    kind: "integer",
    default: 15_000,
    min: 1,
    max: MAX,
    help: "an upload that sends no byte for this long gets 408 upload_timeout",
  },
  {
    key: "podCacheBytes",
    flag: "pod-cache-bytes",
    arg: "N",
    kind: "integer",
    default: 67_108_864,
    min: 0,
    max: MAX,
    help:
      "bytes of small pods (up to 1 MiB each) kept as ready responses, least recently used dropped first; 0 turns the cache off (the default is 64 MiB)",
  },
  {
    key: "headersTimeoutMs",
    flag: "headers-timeout-ms",
    arg: "N",
    kind: "integer",
    default: 20_000,
    min: 1,
    max: MAX,
    help:
      "a connection that has not sent a whole request head in this long gets 408 and is closed (Node build; Deno.serve has no such timeout)",
  },
  {
    key: "podHeaderOptions.csp",
    flag: "csp",
    arg: "STR",
    kind: "string",
    defaultText: "see [pod headers](#get-id-and-head-id)",
    help:
      "replaces the pods' content policy (the sandbox policy is always sent)",
  },
  {
    key: "podHeaderOptions.permissionsPolicy",
    flag: "permissions-policy",
    arg: "STR",
    kind: "string",
    defaultText: "every feature denied",
    help: "replaces the pods' Permissions-Policy",
  },
  {
    key: "podHeaderOptions.sandbox",
    flag: "sandbox",
    arg: "STR",
    kind: "string",
    default: DEFAULT_SANDBOX,
    help: "the pods' sandbox tokens; allow-same-origin is refused",
  },
  {
    key: "podHeaderOptions.scriptPolicy",
    flag: "script-policy",
    arg: "unsafe-inline|hashes",
    kind: "choice",
    choices: ["unsafe-inline", "hashes"],
    default: "unsafe-inline",
    help:
      "hashes: the pods' content policy allows only their own inline scripts, by SHA-256 (a script injected at run time does not run)",
  },
  {
    key: "signaling.maxFrameBytes",
    flag: "max-frame-bytes",
    arg: "N",
    kind: "integer",
    default: 65_536,
    min: 16,
    max: MAX,
    help: "largest signaling frame; larger ones close the socket with 1009",
  },
  {
    key: "signaling.maxPeersPerSession",
    flag: "max-peers-per-session",
    arg: "N",
    kind: "integer",
    default: 32,
    min: 1,
    max: MAX,
    help: "peers in one session; past it session_full",
  },
  {
    key: "signaling.maxSockets",
    flag: "max-sockets",
    arg: "N",
    kind: "integer",
    default: 10_000,
    min: 1,
    max: MAX,
    help: "open WebSockets; past it 503 before the upgrade",
  },
  {
    key: "signaling.joinTimeoutMs",
    flag: "join-timeout-ms",
    arg: "N",
    kind: "integer",
    default: 10_000,
    min: 1,
    max: MAX,
    help: "a socket that has not joined by then is closed (1008)",
  },
  {
    key: "signaling.rateLimitBurst",
    flag: "rate-limit-burst",
    arg: "N",
    kind: "integer",
    default: 100,
    min: 1,
    max: MAX,
    help: "token bucket size per socket",
  },
  {
    key: "signaling.rateLimitPerSecond",
    flag: "rate-limit-per-second",
    arg: "N",
    kind: "integer",
    default: 50,
    min: 1,
    max: MAX,
    help: "token refill per second per socket",
  },
  {
    key: "signaling.pingIntervalMs",
    flag: "ping-interval-ms",
    arg: "N",
    kind: "integer",
    default: 30_000,
    min: 1,
    max: MAX,
    help: "ping interval; a peer silent for two intervals is dropped",
  },
  {
    key: "signaling.maxBufferedBytes",
    flag: "max-buffered-bytes",
    arg: "N",
    kind: "integer",
    default: 1_048_576,
    min: 1,
    max: MAX,
    help:
      "unsent bytes one socket may hold; past it the socket is closed with 1013 and its peers get peer-left",
  },
  {
    key: "signaling.allowedOrigins",
    flag: "allowed-origin",
    arg: "O",
    repeatable: true,
    kind: "origins",
    defaultText: "any",
    help: 'WebSocket origins allowed (403 otherwise); pods send "null"',
  },
  {
    key: "iceServers",
    flag: "stun-url",
    arg: "URL",
    repeatable: true,
    kind: "iceServers",
    default: [],
    defaultText: "none",
    help:
      "static ICE servers sent to every peer (the flag adds a stun: URL; the option takes RTCIceServer objects)",
  },
  {
    key: "turn.urls",
    flag: "turn-url",
    arg: "URL",
    repeatable: true,
    kind: "turnUrls",
    defaultText: "none",
    help:
      "turn: or turns: URLs whose credentials the broker mints per peer (needs the secret)",
  },
  {
    key: "turn.secret",
    flag: "turn-secret-file",
    arg: "PATH",
    env: "POD_BROKER_TURN_SECRET",
    kind: "secret",
    defaultText: "none",
    help:
      "the TURN server's static-auth-secret (CLI: from a file or the environment, never an argument)",
  },
  {
    key: "turn.ttlSeconds",
    flag: "turn-ttl",
    arg: "SECONDS",
    kind: "integer",
    default: 3_600,
    min: 1,
    max: 604_800,
    help: "lifetime of a minted TURN credential",
  },
  {
    key: "metrics.port",
    flag: "metrics-port",
    arg: "N",
    kind: "integer",
    min: 0,
    max: 65_535,
    defaultText: "off",
    help:
      "serve Prometheus metrics at /metrics on this port (a separate listener)",
  },
  {
    key: "metrics.hostname",
    flag: "metrics-hostname",
    arg: "H",
    kind: "string",
    default: "127.0.0.1",
    help: "address of the metrics listener",
  },
  {
    key: "accessLog",
    flag: "access-log",
    arg: "on|off|ip",
    kind: "choice",
    choices: ["on", "off", "ip"],
    default: "on",
    help:
      "one JSON line per request on standard output; ip adds the client address",
  },
  {
    key: "denyList",
    flag: "deny-list",
    arg: "FILE",
    kind: "denyList",
    defaultText: "none",
    help:
      "owner keys and content digests refused (403) and hidden (410); reloaded on SIGHUP",
  },
  {
    key: "bus",
    flag: null,
    kind: "bus",
    defaultText: "in-process (CLI: `--bus`)",
    help:
      "the signaling bus between brokers: sessions shared across processes (RedisBus)",
  },
  {
    key: "logger",
    flag: null,
    kind: "logger",
    defaultText: "JSON lines on stderr",
    help: "(level, message, fields) => void; silentLogger drops everything",
  },
];

/** Signaling options with every default applied. */
export interface ResolvedSignalingOptions {
  /** Largest frame in bytes. */
  maxFrameBytes: number;
  /** Peers in one session. */
  maxPeersPerSession: number;
  /** Open sockets in the broker. */
  maxSockets: number;
  /** Join deadline. */
  joinTimeoutMs: number;
  /** Token bucket size. */
  rateLimitBurst: number;
  /** Token refill per second. */
  rateLimitPerSecond: number;
  /** Ping interval. */
  pingIntervalMs: number;
  /** Unsent bytes one socket may hold. */
  maxBufferedBytes: number;
  /** Allowed origins, or null for any. */
  allowedOrigins: string[] | null;
}

/** TURN with every default applied. */
export interface ResolvedTurnOptions {
  /** `turn:`/`turns:` URLs. */
  urls: string[];
  /** The shared secret. */
  secret: string;
  /** Credential lifetime. */
  ttlSeconds: number;
}

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
  /** Upload bytes held at once. */
  maxUploadBytesInFlight: number;
  /** Longest wait for the next byte of an upload. */
  uploadTimeoutMs: number;
  /** Longest wait for a whole request head (Node build). */
  headersTimeoutMs: number;
  /** Bytes of pods kept as ready responses. */
  podCacheBytes: number;
  /** Pod header overrides. */
  podHeaderOptions: PodHeaderOptions;
  /** Signaling limits. */
  signaling: ResolvedSignalingOptions;
  /** Static ICE servers. */
  iceServers: IceServer[];
  /** TURN with minted credentials, or null. */
  turn: ResolvedTurnOptions | null;
  /** The signaling bus, or undefined for the in-process one. */
  bus: Bus | undefined;
  /** The ICE servers of one peer: static entries plus minted TURN. */
  iceServersFor: (peerId: string) => IceServer[];
  /** Log sink. */
  logger: Logger;
  /** The metrics listener, or null when off. */
  metrics: { port: number; hostname: string } | null;
  /** The access log: "on", "off" or "ip". */
  accessLog: "on" | "off" | "ip";
  /** The deny list, or null. */
  denyList: DenyList | null;
}

/**
 * A bad option: a `TypeError` that names the option, so the CLI can name
 * its flag. Any other `TypeError` from the broker is a bug.
 */
export class OptionError extends TypeError {
  /** The option's key path. */
  readonly key: string;
  /** What is wrong with it, without the option's name. */
  readonly reason: string;

  /**
   * Creates the error for one option.
   *
   * @param key The option's key path.
   * @param reason What is wrong, such as "must be a boolean".
   */
  constructor(key: string, reason: string) {
    super(`Cannot start the broker: option '${key}' ${reason}`);
    this.name = "OptionError";
    this.key = key;
    this.reason = reason;
  }
}

/** Groups of nested options. */
const GROUPS = ["podHeaderOptions", "signaling", "turn", "metrics"] as const;

/**
 * The default of the option at `key`.
 *
 * @param key A key path from {@linkcode OPTIONS}.
 * @returns Its default value.
 * @throws {RangeError} For a key with no row or no default.
 */
export function defaultOf<T>(key: string): T {
  const spec = OPTIONS.find((row) => row.key === key);
  if (spec?.default === undefined) {
    throw new RangeError(`Cannot find a default for option '${key}'`);
  }
  return spec.default as T;
}

/** The default upload limit (50 MiB), from the options table. */
export const DEFAULT_MAX_BLOB_BYTES: number = defaultOf("maxBlobBytes");

/** Defaults of the signaling limits, from the options table. */
export const DEFAULT_SIGNALING: Readonly<
  Omit<ResolvedSignalingOptions, "allowedOrigins">
> = Object.freeze(
  Object.fromEntries(
    OPTIONS.filter((row) =>
      row.key.startsWith("signaling.") && row.default !== undefined
    ).map((row) => [row.key.slice("signaling.".length), row.default]),
  ) as unknown as Omit<ResolvedSignalingOptions, "allowedOrigins">,
);

/**
 * Checks `options` and applies the defaults.
 *
 * @param options What the caller passed.
 * @returns The complete options.
 * @throws {OptionError} (a `TypeError`) naming the first unknown, missing or
 * out-of-range option.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemoryRegistry, resolveOptions } from "../core.ts";
 *
 * const resolved = resolveOptions({ registry: new MemoryRegistry() });
 * assert.equal(resolved.port, 8080);
 * assert.throws(() => resolveOptions({ registry: new MemoryRegistry(), port: -1 }), TypeError);
 * ```
 */
export function resolveOptions(options: SignalServerOptions): ResolvedOptions {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("Cannot start the broker: options must be an object");
  }
  checkKeys(options as unknown as Record<string, unknown>);
  const out: Record<string, unknown> = {};
  for (const group of GROUPS) out[group] = {};
  const given = options as unknown as Record<string, unknown>;
  for (const spec of OPTIONS) {
    const value = valueAt(given, spec.key);
    const checked = value === undefined && !spec.required
      ? structuredCloneDefault(spec.default)
      : check(spec, value);
    if (checked !== undefined) setAt(out, spec.key, checked);
  }
  const scripts = scriptPolicyConflict(
    out.podHeaderOptions as PodHeaderOptions,
  );
  if (scripts !== null) throw new OptionError("podHeaderOptions.csp", scripts);
  const signaling = out.signaling as ResolvedSignalingOptions;
  signaling.allowedOrigins ??= null;
  const turn = resolveTurn(
    given.turn,
    out.turn as Partial<ResolvedTurnOptions>,
  );
  const iceServers = out.iceServers as IceServer[];
  return {
    registry: out.registry as Registry,
    port: out.port as number,
    hostname: out.hostname as string,
    baseUrl: (out.baseUrl as string | undefined) ?? null,
    trustProxy: out.trustProxy as boolean,
    maxBlobBytes: out.maxBlobBytes as number,
    maxUploadBytesInFlight: out.maxUploadBytesInFlight as number,
    uploadTimeoutMs: out.uploadTimeoutMs as number,
    headersTimeoutMs: out.headersTimeoutMs as number,
    podCacheBytes: out.podCacheBytes as number,
    podHeaderOptions: out.podHeaderOptions as PodHeaderOptions,
    signaling,
    iceServers,
    turn,
    iceServersFor: createIceServerSource(iceServers, turn),
    bus: out.bus as Bus | undefined,
    logger: (out.logger as Logger | undefined) ?? jsonLogger,
    metrics: (out.metrics as { port?: number }).port === undefined
      ? null
      : out.metrics as { port: number; hostname: string },
    accessLog: out.accessLog as "on" | "off" | "ip",
    denyList: (out.denyList as DenyList | undefined) ?? null,
  };
}

function resolveTurn(
  given: unknown,
  resolved: Partial<ResolvedTurnOptions>,
): ResolvedTurnOptions | null {
  if (given === undefined) return null;
  if (resolved.urls === undefined || resolved.urls.length === 0) {
    throw new OptionError("turn.urls", "must list at least one TURN URL");
  }
  if (resolved.secret === undefined) {
    throw new OptionError("turn.secret", "is required with turn.urls");
  }
  return resolved as ResolvedTurnOptions;
}

function structuredCloneDefault(value: unknown): unknown {
  return Array.isArray(value) ? [...value] : value;
}

/** Refuses keys that no row names, at the top level and in each group. */
function checkKeys(options: Record<string, unknown>): void {
  const allowed = new Set(OPTIONS.map((row) => row.key));
  for (const key of Object.keys(options)) {
    if ((GROUPS as readonly string[]).includes(key)) {
      const group = options[key];
      if (group === undefined) continue;
      if (typeof group !== "object" || group === null || Array.isArray(group)) {
        throw new OptionError(key, "must be an object");
      }
      for (const inner of Object.keys(group)) {
        if (!allowed.has(`${key}.${inner}`)) unknown(`${key}.${inner}`);
      }
    } else if (!allowed.has(key)) {
      unknown(key);
    }
  }
}

function unknown(key: string): never {
  throw new TypeError(`Cannot start the broker: unknown option '${key}'`);
}

function valueAt(object: Record<string, unknown>, key: string): unknown {
  const [head, tail] = key.split(".") as [string, string | undefined];
  const value = object[head];
  if (tail === undefined) return value;
  return (value as Record<string, unknown> | undefined)?.[tail];
}

function setAt(object: Record<string, unknown>, key: string, value: unknown) {
  const [head, tail] = key.split(".") as [string, string | undefined];
  if (tail === undefined) object[head] = value;
  else (object[head] as Record<string, unknown>)[tail] = value;
}

/** The checked value of one option, or an {@linkcode OptionError}. */
function check(spec: OptionSpec, value: unknown): unknown {
  const fail = (reason: string): never => {
    throw new OptionError(spec.key, reason);
  };
  switch (spec.kind) {
    case "integer": {
      const min = spec.min ?? 0;
      const max = spec.max ?? MAX;
      if (
        !Number.isSafeInteger(value) || (value as number) < min ||
        (value as number) > max
      ) {
        fail(`must be an integer from ${min} to ${max}`);
      }
      return value;
    }
    case "string":
      if (typeof value !== "string" || value === "") {
        fail("must be a non-empty string");
      }
      if (spec.key === "podHeaderOptions.sandbox") {
        try {
          assertSafeSandbox(value as string);
        } catch {
          fail(
            "must not allow-same-origin: it would give every pod the broker's origin",
          );
        }
      }
      return value;
    case "boolean":
      if (typeof value !== "boolean") fail("must be a boolean");
      return value;
    case "url":
      return httpUrl(value) ??
        fail("must be an http(s) URL without query or fragment");
    case "origins":
      if (
        !Array.isArray(value) ||
        value.some((o) => typeof o !== "string" || o === "")
      ) {
        fail("must be an array of origins");
      }
      return [...(value as string[])];
    case "iceServers":
      return iceServerList(value) ??
        fail(
          "must be an array of {urls, username?, credential?} with stun:, turn: or turns: URLs (TURN with credentials)",
        );
    case "turnUrls":
      if (
        !Array.isArray(value) ||
        value.some((url) => typeof url !== "string" || !isTurnUrl(url))
      ) {
        fail("must be an array of turn: or turns: URLs");
      }
      return [...(value as string[])];
    case "secret":
      if (typeof value !== "string" || value === "") {
        fail("must be a non-empty string");
      }
      return value;
    case "registry": {
      const registry = value as Partial<Registry> | null;
      for (
        const method of ["putPod", "getRecord", "getBlob", "bumpHits"] as const
      ) {
        if (typeof registry?.[method] !== "function") {
          fail(`must be a Registry with ${method}()`);
        }
      }
      return value;
    }
    case "bus":
      if (!isBus(value)) {
        fail(
          "must be a signaling Bus (attach, watch, unwatch, join, leave, snapshot, deliver, close)",
        );
      }
      return value;
    case "logger":
      if (typeof value !== "function") fail("must be a function");
      return value;
    case "denyList":
      if (!(value instanceof DenyList)) {
        fail(
          "must be a DenyList (DenyList.load(path) or new DenyList({ keys, contents }))",
        );
      }
      return value;
    case "choice":
      if (!spec.choices!.includes(value as string)) {
        fail(`must be one of ${spec.choices!.map((c) => `'${c}'`).join(", ")}`);
      }
      return value;
  }
}

function httpUrl(value: unknown): string | null {
  if (typeof value !== "string") return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (
    (url.protocol !== "http:" && url.protocol !== "https:") || url.search ||
    url.hash
  ) {
    return null;
  }
  return url.href.replace(/\/+$/, "");
}

function iceServerList(value: unknown): IceServer[] | null {
  if (!Array.isArray(value)) return null;
  const servers: IceServer[] = [];
  for (const entry of value as unknown[]) {
    if (typeof entry !== "object" || entry === null) return null;
    const { urls, username, credential, ...rest } = entry as Record<
      string,
      unknown
    >;
    if (Object.keys(rest).length > 0) return null;
    const list = typeof urls === "string" ? [urls] : urls;
    if (
      !Array.isArray(list) || list.length === 0 ||
      list.some((url) => typeof url !== "string" || !isIceUrl(url))
    ) {
      return null;
    }
    const hasTurn = list.some((url) => isTurnUrl(url as string));
    if (username !== undefined && typeof username !== "string") return null;
    if (credential !== undefined && typeof credential !== "string") return null;
    if (hasTurn && (username === undefined || credential === undefined)) {
      return null;
    }
    const server: IceServer = {
      urls: typeof urls === "string" ? urls : [...list as string[]],
    };
    if (username !== undefined) server.username = username as string;
    if (credential !== undefined) server.credential = credential as string;
    servers.push(server);
  }
  return servers;
}
