/**
 * The options table: one row per option of `createSignalServer` and per
 * flag that only the CLI has. Everything else is derived from it: the
 * checks and defaults of `resolveOptions` and the type `ResolvedOptions`
 * (`resolve.ts`), the CLI's flags, `--help` and conversions
 * (`cli/serve_flags.ts`), and the README's options table (`deno task docs`).
 * Adding an option is one row here plus its use.
 *
 * @module
 */

import { jsonLogger, type Logger } from "../_util/log.ts";
import {
  DEFAULT_SANDBOX,
  SCRIPT_POLICIES,
  type ScriptPolicy,
} from "../serving/pod_headers.ts";
import type { KindRow, OptionKind } from "./kinds.ts";
import { POD_PERMISSIONS, type PodPermission } from "../serving/permissions.ts";

export type { OptionKind } from "./kinds.ts";

/** One row of {@linkcode OPTIONS}: an option of `createSignalServer`. */
export interface OptionSpec extends KindRow {
  /** Key path in the options object, such as `signaling.maxFrameBytes`. */
  readonly key: string;
  /** The CLI flag without dashes, or null when there is none. */
  readonly flag: string | null;
  /** Placeholder of the flag's value in `--help` (a choice lists its values). */
  readonly arg?: string;
  /** Whether the flag may be repeated (its values are collected). */
  readonly repeatable?: boolean;
  /** Environment variable read when the flag is not given. */
  readonly env?: string;
  /** How the value is checked, and how the flag's text is read. */
  readonly kind: OptionKind;
  /** The default, or undefined when the option has none. */
  readonly default?: unknown;
  /** How the default reads in docs, when it is not the value itself. */
  readonly defaultText?: string;
  /**
   * Whether the option must be given. In a group (`turn`), it must be given
   * with the group, and the group as a whole is then optional (null).
   */
  readonly required?: boolean;
  /** The reason given when a required option is missing. */
  readonly missing?: string;
  /** Resolved to null when not given (else left out). */
  readonly orNull?: true;
  /** In a group (`metrics`): the group is null unless this option is given. */
  readonly switch?: true;
  /** One line of help. */
  readonly help: string;
}

/** A row for a flag that only the CLI has (it chooses the registry or bus). */
export interface CliFlagSpec extends Omit<OptionSpec, "key" | "flag"> {
  /** No option key: the CLI reads the value itself. */
  readonly key: null;
  /** The flag without dashes. */
  readonly flag: string;
}

/** A row of {@linkcode TABLE}. */
export type TableRow = OptionSpec | CliFlagSpec;

/**
 * Every option and CLI-only flag, once. Options under a group
 * (`podHeaderOptions`, `signaling`, `turn`, `metrics`) are written with
 * their path.
 */
export const TABLE = [
  {
    key: "registry",
    flag: null,
    kind: "registry",
    required: true,
    defaultText: "required (CLI: `--registry`)",
    help: "where pods are kept: any object with the four Registry methods",
  },
  {
    key: null,
    flag: "registry",
    kind: "choice",
    choices: ["memory", "sqlite", "postgres"],
    default: "memory",
    help: "where pods are kept",
  },
  {
    key: null,
    flag: "data-dir",
    arg: "PATH",
    kind: "string",
    help: "data directory, required with sqlite",
  },
  {
    key: null,
    flag: "database-url",
    arg: "URL",
    env: "DATABASE_URL",
    kind: "string",
    help:
      "PostgreSQL of --registry postgres, postgres://; the environment keeps a password out of the process list",
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
    orNull: true,
    defaultText: "the request's origin",
    help: "public URL of pod links and of the signaling URL in the CSP",
  },
  {
    key: "trustProxy",
    flag: "trust-proxy",
    kind: "boolean",
    default: false,
    help:
      "honour X-Forwarded-Proto, -Host and -For (the last value of each: the one your proxy appended)",
  },
  {
    key: "podDomain",
    flag: "pod-domain",
    arg: "DOMAIN",
    kind: "domain",
    orNull: true,
    defaultText: "off: pods share the broker's host",
    help:
      "serve each pod at its own origin, LABEL.DOMAIN, so pods get storage (README: An origin per pod); localhost for development",
  },
  {
    key: "podPermissions",
    flag: "pod-permissions",
    arg: "LIST",
    kind: "permissions",
    default: POD_PERMISSIONS as unknown as PodPermission[],
    defaultText:
      "camera,microphone,display-capture,clipboard-write,fullscreen,screen-wake-lock,picture-in-picture,autoplay",
    help:
      "the most a pod on its own origin may be granted of what it declares (camera, microphone, ...; comma-separated, or none); the broker's host never grants",
  },
  {
    key: "maxBlobBytes",
    flag: "max-blob-bytes",
    arg: "N",
    kind: "integer",
    default: 52_428_800,
    min: 1,
    help: "upload limit in bytes",
  },
  {
    key: "maxUploadBytesInFlight",
    flag: "max-upload-bytes-in-flight",
    arg: "N",
    kind: "integer",
    default: 268_435_456,
    min: 1,
    help:
      "upload bytes the broker holds at once (received so far; 64 KiB at the start of a large upload); past it 503 busy",
  },
  {
    key: "uploadTimeoutMs",
    flag: "upload-timeout-ms",
    arg: "N",
    kind: "integer",
    default: 15_000,
    min: 1,
    help: "an upload that sends no byte for this long gets 408 upload_timeout",
  },
  {
    key: "podCacheBytes",
    flag: "pod-cache-bytes",
    arg: "N",
    kind: "integer",
    default: 67_108_864,
    min: 0,
    help:
      "bytes of small pods (up to 1 MiB each) kept as ready responses, least recently used dropped first; 0 turns the cache off",
  },
  {
    key: "headersTimeoutMs",
    flag: "headers-timeout-ms",
    arg: "N",
    kind: "integer",
    default: 20_000,
    min: 1,
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
    kind: "sandbox",
    default: DEFAULT_SANDBOX as string,
    help: "the pods' sandbox tokens; allow-same-origin is refused",
  },
  {
    key: "podHeaderOptions.scriptPolicy",
    flag: "script-policy",
    kind: "choice",
    choices: SCRIPT_POLICIES as readonly ScriptPolicy[],
    default: SCRIPT_POLICIES[0] as ScriptPolicy,
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
    help: "largest signaling frame; larger ones close the socket with 1009",
  },
  {
    key: "signaling.maxPeersPerSession",
    flag: "max-peers-per-session",
    arg: "N",
    kind: "integer",
    default: 32,
    min: 1,
    help: "peers in one session; past it session_full",
  },
  {
    key: "signaling.maxSockets",
    flag: "max-sockets",
    arg: "N",
    kind: "integer",
    default: 10_000,
    min: 1,
    help: "open WebSockets; past it 503 before the upgrade",
  },
  {
    key: "signaling.joinTimeoutMs",
    flag: "join-timeout-ms",
    arg: "N",
    kind: "integer",
    default: 10_000,
    min: 1,
    help: "a socket that has not joined by then is closed (1008)",
  },
  {
    key: "signaling.rateLimitBurst",
    flag: "rate-limit-burst",
    arg: "N",
    kind: "integer",
    default: 100,
    min: 1,
    help: "token bucket size per socket",
  },
  {
    key: "signaling.rateLimitPerSecond",
    flag: "rate-limit-per-second",
    arg: "N",
    kind: "integer",
    default: 50,
    min: 1,
    help: "token refill per second per socket",
  },
  {
    key: "signaling.pingIntervalMs",
    flag: "ping-interval-ms",
    arg: "N",
    kind: "integer",
    default: 30_000,
    min: 1,
    help: "ping interval; a peer silent for two intervals is dropped",
  },
  {
    key: "signaling.maxBufferedBytes",
    flag: "max-buffered-bytes",
    arg: "N",
    kind: "integer",
    default: 1_048_576,
    min: 1,
    help:
      "unsent bytes one socket may hold; past it the socket is closed with 1013 and its peers get peer-left",
  },
  {
    key: "signaling.allowedOrigins",
    flag: "allowed-origin",
    arg: "O",
    repeatable: true,
    kind: "origins",
    orNull: true,
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
    required: true,
    missing: "must list at least one TURN URL",
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
    required: true,
    missing: "is required with turn.urls",
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
    switch: true,
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
    orNull: true,
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
    key: null,
    flag: "bus",
    kind: "choice",
    choices: ["local", "redis"],
    default: "local",
    help: "signaling bus between brokers; local keeps sessions in this process",
  },
  {
    key: null,
    flag: "redis-url",
    arg: "URL",
    env: "REDIS_URL",
    kind: "string",
    help:
      "Redis of --bus redis, redis:// or rediss://; the environment keeps a password out of the process list",
  },
  {
    key: "logger",
    flag: null,
    kind: "logger",
    default: jsonLogger as Logger,
    defaultText: "JSON lines on stderr",
    help: "(level, message, fields) => void; silentLogger drops everything",
  },
] as const;

// The table's rows are checked against the row types here (`satisfies`
// would hide the table's type from declaration emit).
const ROWS: readonly TableRow[] = TABLE;

// And no row has a field the row types do not name (a misspelt `requird`).
type RowField = (typeof TABLE)[number] extends infer R
  ? R extends unknown ? keyof R : never
  : never;
const _noStrayField: [Exclude<RowField, keyof OptionSpec>] extends [never]
  ? true
  : false = true;

/** Whether `row` is an option of `createSignalServer` (not CLI-only). */
export function isOption(row: TableRow): row is OptionSpec {
  return row.key !== null;
}

/** Every option of `createSignalServer`, once: the rows of the table with a key. */
export const OPTIONS: readonly OptionSpec[] = ROWS.filter(isOption);

/** The flags that only the CLI has: they choose and open the registry and the bus. */
export const CLI_ONLY_FLAGS: readonly CliFlagSpec[] = ROWS.filter((
  row,
): row is CliFlagSpec => row.key === null);

/**
 * The placeholder of a row's flag value in `--help` and the README: its
 * `arg`, or its choices; none for a switch.
 */
export function argOf(row: TableRow): string | undefined {
  return row.arg ?? row.choices?.join("|");
}

/**
 * How a row's default reads, written once for `--help` and the README: the
 * `defaultText`, or the value (with MiB or KiB for a byte count).
 *
 * @returns The text, or undefined when there is no default to show.
 */
export function defaultLabel(row: TableRow): string | undefined {
  if (row.defaultText !== undefined) return row.defaultText;
  const value = row.default;
  if (value === undefined) return undefined;
  if (typeof value === "number" && /bytes/i.test(row.flag ?? row.key ?? "")) {
    for (const [unit, size] of [["MiB", 1 << 20], ["KiB", 1 << 10]] as const) {
      if (value >= size && value % size === 0) {
        return `${value} = ${value / size} ${unit}`;
      }
    }
  }
  return String(value);
}
