/**
 * The options of `createSignalServer` as a caller writes them, shared by
 * the configuration, the CLI and both runtime adapters. Written by hand for
 * their doc comments (what an editor shows on hover); the options table
 * (`table.ts`) is the source, and `tests/unit/options_test.ts` proves these
 * agree with it: the same keys, value types and `@default`s.
 *
 * @module
 */

import type { IceServer, TurnOptions } from "../signaling/ice.ts";
import type { Logger } from "../_util/log.ts";
import type { PodHeaderOptions } from "../serving/pod_headers.ts";
import type { PodPermission } from "../serving/permissions.ts";
import type { DenyList } from "../operator/deny_list.ts";
import type { Bus } from "../signaling/bus/mod.ts";
import type { Registry } from "../registries/types.ts";

export type { PodHeaderOptions } from "../serving/pod_headers.ts";

/** Limits and policy of the signaling hub (DESIGN section 4). */
export interface SignalingOptions {
  /** Largest accepted frame in bytes; larger ones close the socket with 1009. @default {65536} */
  maxFrameBytes?: number;
  /** Peers allowed in one session; past it `session_full`. @default {32} */
  maxPeersPerSession?: number;
  /** Open sockets allowed in the broker; past it 503 before upgrade. @default {10000} */
  maxSockets?: number;
  /** A socket that has not joined within this is closed. @default {10000} */
  joinTimeoutMs?: number;
  /** Token bucket size per socket. @default {100} */
  rateLimitBurst?: number;
  /** Token bucket refill per second per socket. @default {50} */
  rateLimitPerSecond?: number;
  /** Ping interval; a peer silent for two intervals is dead. @default {30000} */
  pingIntervalMs?: number;
  /**
   * Unsent bytes a socket may hold; past it the socket is closed with 1013
   * and its peers get `peer-left`. @default {1048576}
   */
  maxBufferedBytes?: number;
  /**
   * Bytes of signal data held for all the away peers of a broker together
   * (each peer also at most 256 KiB); past it the oldest held signal of the
   * peer sent to goes, and it is told to restart ICE. With a `RedisBus`, the
   * bytes this broker's peers may put into holds on Redis within 30 s; past
   * it a signal to an away peer goes, and it is told the same.
   * @default {67108864}
   */
  maxHeldBytes?: number;
  /** Origins (the literal "null" included) allowed to connect; absent allows any. */
  allowedOrigins?: string[];
}

/** Options of `createSignalServer` (DESIGN section 6). */
export interface SignalServerOptions {
  /** Where pods are stored (required). */
  registry: Registry;
  /** Port to listen on; 0 picks a free one. @default {8080} */
  port?: number;
  /** Address to listen on. @default {"0.0.0.0"} */
  hostname?: string;
  /** Public base URL of pod links; else the request's own origin. */
  baseUrl?: string;
  /** Honour `X-Forwarded-Proto` / `X-Forwarded-Host`. @default {false} */
  trustProxy?: boolean;
  /**
   * Serve each pod at its own origin, `SCHEME://LABEL.DOMAIN[:PORT]/`
   * (scheme and port from the base URL), such as `pods.example.com`, or
   * `localhost` for development. Off unless given.
   */
  podDomain?: string;
  /**
   * Whether `podDomain` is on the Public Suffix List: `"listed"`, or
   * `"unlisted"` to serve pods before it is (any pod can then set cookies
   * for every pod, and with them make every pod host refuse a visitor).
   * Required with a `podDomain`, except `localhost` and names under
   * `.localhost`, `.test`, `.example` and `.invalid`.
   */
  podDomainPsl?: "listed" | "unlisted";
  /**
   * The most a pod on its own origin (`podDomain`) may be granted of the
   * features it declares in `<meta name="pod-permissions">`; `[]` grants
   * nothing. The broker's host never grants any.
   * @default {["camera", "microphone", "display-capture", "clipboard-write", "fullscreen", "screen-wake-lock", "picture-in-picture", "autoplay"]}
   */
  podPermissions?: PodPermission[];
  /** Upload limit in bytes. @default {52428800} */
  maxBlobBytes?: number;
  /**
   * Upload bytes the broker holds at once: each upload reserves its
   * Content-Length (or `maxBlobBytes` when chunked) until it is stored;
   * past the budget a new upload gets 503 `busy`. @default {268435456}
   */
  maxUploadBytesInFlight?: number;
  /**
   * An upload that sends no byte for this long, or less than 1 KiB a
   * second over any window this long, or is not whole after 40 times this
   * long, gets 408. @default {15000}
   */
  uploadTimeoutMs?: number;
  /**
   * Uploads and updates in flight from one client address (the peer's, or
   * with `trustProxy` the last `X-Forwarded-For` hop); past it 503 `busy`.
   * 0 turns the cap off. @default {0}
   */
  maxUploadsPerAddress?: number;
  /**
   * A connection that has not sent a whole request head in this long gets
   * 408 and is closed. Node build only: `Deno.serve` offers no header
   * timeout. @default {20000}
   */
  headersTimeoutMs?: number;
  /**
   * A client that reads nothing of a response for this long is dropped, its
   * connection closed (nginx's `send_timeout`), on `node:http`. `Deno.serve`
   * has no send timeout: there a pod over 1 MiB is cut off instead (sent in
   * slices, so a stalled client holds one, not the pod). @default {60000}
   */
  sendTimeoutMs?: number;
  /**
   * The drain window, in seconds. On `close()` (and the CLI's SIGTERM or
   * SIGINT), `/health` answers 503 `"status":"draining"`, new WebSocket
   * upgrades get 503 `shutting_down` with `Retry-After`, and each open
   * socket is told to reconnect (`{"type":"reconnect"}` on `/signal`) and
   * closed with 1012, one at a time, spread evenly over the window, so that
   * the reconnects do not reach the other brokers as a herd. `close()`
   * resolves once no socket is left, or at the window's end; plain HTTP is
   * served meanwhile. 0 closes them all at once. @default {30}
   */
  drainSeconds?: number;
  /**
   * Bytes of small pods (up to 1 MiB each) kept as ready responses, least
   * recently used dropped first; 0 turns the cache off. @default {67108864}
   */
  podCacheBytes?: number;
  /** Pod response headers. */
  podHeaderOptions?: PodHeaderOptions;
  /** Signaling limits. */
  signaling?: SignalingOptions;
  /**
   * Signaling for apps written for other libraries: `"y-webrtc"` serves
   * `/y-webrtc` (y-webrtc's protocol), `"peerjs"` serves `/peerjs` and
   * `/peerjs/id` (the PeerJS server's), `"nostr"` serves `/nostr` (a Nostr
   * relay for ephemeral events, as Trystero uses one); `/ice` is served
   * while one is on; `[]` serves none of them (404).
   * @default {["y-webrtc","peerjs","nostr"]}
   */
  compat?: ("y-webrtc" | "peerjs" | "nostr")[];
  /**
   * `GET /ice` answers per client address (the peer's, or with
   * `trustProxy` the last `X-Forwarded-For` hop): this many at once,
   * refilled evenly over a minute; past it 429 `rate_limited`. Each answer
   * mints TURN credentials. @default {60}
   */
  iceRequestsPerMinute?: number;
  /**
   * Static ICE servers sent to every peer in `joined` and `ice` frames
   * (STUN, or TURN with fixed credentials). @default {[]}
   */
  iceServers?: IceServer[];
  /** TURN servers whose per-peer, time-limited credentials the broker mints. */
  turn?: TurnOptions;
  /**
   * The signaling bus between brokers (a `RedisBus` from
   * `createRedisBus`); absent, sessions live in this process only.
   */
  bus?: Bus;
  /** Receives log events. @default {jsonLogger} */
  logger?: Logger;
  /** The Prometheus metrics listener; off unless `port` is given. */
  metrics?: {
    /** Port of the metrics listener; 0 picks a free one. */
    port?: number;
    /** Address of the metrics listener. @default {"127.0.0.1"} */
    hostname?: string;
  };
  /** The access log on standard output: "on", "off", or "ip" (with client addresses). @default {"on"} */
  accessLog?: "on" | "off" | "ip";
  /** Owner keys and content digests refused at upload and hidden (410). */
  denyList?: DenyList;
}

/** A running broker, as `createSignalServer` returns it. */
export interface SignalServer {
  /** The bound port. */
  readonly port: number;
  /** The bound address. */
  readonly hostname: string;
  /** The metrics listener's bound port, or null when metrics are off. */
  readonly metricsPort: number | null;
  /**
   * Drains the WebSockets over `drainSeconds` (each told to reconnect and
   * closed with 1012), then stops listening, and resolves when all is
   * done: at once when no socket is open.
   */
  close(): Promise<void>;
}
