/**
 * The options table: one row per option of `createSignalServer` and per
 * flag that only the CLI has. Everything else is derived from it: the
 * checks and defaults of `resolveOptions` and the type `ResolvedOptions`
 * (`resolve.ts`), the CLI's flags, `--help` and conversions
 * (`cli/serve_flags.ts`), and the options table of docs/operators/options.md (`deno task docs`).
 * Adding an option is one row here plus its use.
 *
 * @module
 */

import { DEFAULT_MAX_BLOB_BYTES } from "../pod/limits.ts";
import { jsonLogger, type Logger } from "../_util/log.ts";
import {
  DEFAULT_SANDBOX,
  POD_STORAGES,
  type PodStorage,
  SCRIPT_POLICIES,
  type ScriptPolicy,
} from "../serving/pod_headers.ts";
import {
  POD_DOMAIN_LISTINGS,
  type PodDomainListing,
} from "../serving/pod_origin.ts";
import { POD_PERMISSIONS, type PodPermission } from "../serving/permissions.ts";
import {
  COMPAT_DIALECTS,
  type CompatDialect,
} from "../signaling/compat/limits.ts";
import { MAX_HELD_BYTES_TOTAL } from "../signaling/bus/held.ts";

export type { OptionKind } from "./kinds.ts";
export { argOf, defaultLabel } from "./row.ts";
export type { CliFlagSpec, OptionSpec, TableRow } from "./row.ts";

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
      "serve each pod at its own origin, LABEL.DOMAIN, so pods get storage (docs/operators/pod-domain.md); localhost for development",
  },
  {
    key: "podDomainPsl",
    flag: "pod-domain-psl",
    kind: "choice",
    choices: POD_DOMAIN_LISTINGS as readonly PodDomainListing[],
    orNull: true,
    defaultText: "none: required with a pod domain reachable in public",
    help:
      "whether the pod domain is on the Public Suffix List: listed, or unlisted to serve pods before it is (any pod can then set cookies for every pod, and block them for a visitor); not needed for localhost and .test, .example, .invalid names",
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
    key: "podHeaderOptions.storage",
    flag: "pod-storage",
    kind: "choice",
    choices: POD_STORAGES as readonly PodStorage[],
    default: POD_STORAGES[0] as PodStorage,
    help:
      "which pods on their own origin run at it, with storage: all, or granted: those granted a feature by --pod-permissions (the others run at an opaque origin: no storage, and no camera or microphone in anything they open)",
  },
  {
    key: "maxBlobBytes",
    flag: "max-blob-bytes",
    arg: "N",
    kind: "integer",
    default: DEFAULT_MAX_BLOB_BYTES as number,
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
    help:
      "an upload that sends no byte for this long, or under 1 KiB a second over this long, or is not whole after 40 times this, gets 408 upload_timeout",
  },
  {
    key: "maxUploadsPerAddress",
    flag: "max-uploads-per-address",
    arg: "N",
    kind: "integer",
    default: 0,
    min: 0,
    help:
      "uploads and updates in flight from one client address (with --trust-proxy, the last X-Forwarded-For hop); past it 503 busy; 0 turns the cap off",
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
    key: "sendTimeoutMs",
    flag: "send-timeout-ms",
    arg: "N",
    kind: "integer",
    default: 60_000,
    min: 1,
    help:
      "a client that reads nothing of a response for this long is dropped (node:http; on Deno.serve a pod over 1 MiB is cut off)",
  },
  {
    key: "drainSeconds",
    flag: "drain-seconds",
    arg: "N",
    kind: "integer",
    default: 30,
    max: 600,
    help:
      "on SIGTERM, SIGINT or close(): /health answers 503 draining, new sockets get 503, and open ones are told to reconnect and closed with 1012, spread over this window; 0 closes them all at once",
  },
  {
    key: "podHeaderOptions.csp",
    flag: "csp",
    arg: "STR",
    kind: "string",
    defaultText: "the strict pod policy of docs/reference/http.md",
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
    key: "signaling.maxHeldBytes",
    flag: "max-held-bytes",
    arg: "N",
    kind: "integer",
    default: MAX_HELD_BYTES_TOTAL as number,
    min: 1,
    help:
      "bytes of signals held for all the away peers of a broker, past it the oldest held signal of the peer goes; with --bus redis, bytes this broker's peers may put into the holds of away peers within 30 s, past it the signal goes; either way the away peer is told to restart ICE",
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
    key: "compat",
    flag: "compat",
    arg: "LIST",
    kind: "choiceList",
    choices: COMPAT_DIALECTS as readonly CompatDialect[],
    default: COMPAT_DIALECTS as readonly CompatDialect[],
    help:
      "signaling for apps written for other libraries: y-webrtc serves /y-webrtc, peerjs serves /peerjs and /peerjs/id, nostr serves /nostr (ephemeral events, for Trystero), any serves /ice; comma-separated, or none",
  },
  {
    key: "iceRequestsPerMinute",
    flag: "ice-requests-per-minute",
    arg: "N",
    kind: "integer",
    default: 60,
    min: 1,
    help:
      "GET /ice answers per client address (with --trust-proxy, the last X-Forwarded-For hop): N at once, refilled evenly over a minute; past it 429 rate_limited",
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
    missing: "is required with",
    missingWith: "turn.urls",
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
