/**
 * The dialects, one row each: the path its sockets upgrade at, the query
 * parameters its hub reads, and how its hub is made. A new dialect costs its
 * codec, its checks, its hub and a row here; the broker builds the hubs and
 * their routes from this table alone.
 *
 * @module
 */

import type { Logger } from "../../_util/log.ts";
import type { CompatBus } from "../bus/compat.ts";
import type { SocketHub } from "../socket_hub.ts";
import type { PeerSocket, SignalingLimits } from "../types.ts";
import type {
  CompatClient,
  CompatHub,
  CompatHubOptions,
  CompatObserver,
  CompatSocket,
} from "./base.ts";
import type { CompatDialect } from "./limits.ts";
import { NostrHub } from "./nostr.ts";
import { PeerJsHub } from "./peerjs.ts";
import { createCompatRelays, soloRelays } from "./relays.ts";
import { YWebrtcHub } from "./y_webrtc.ts";

/** One dialect's row. */
export interface DialectRow {
  /** The path its sockets upgrade at. */
  readonly path: string;
  /** The query parameters its hub reads from the upgrade request. */
  readonly params: readonly string[];
  /** Makes its hub. */
  make(options: CompatHubOptions): CompatHub<CompatSocket>;
}

/** Every dialect the broker speaks besides `/signal`. */
export const DIALECTS: Readonly<Record<CompatDialect, DialectRow>> = {
  "y-webrtc": {
    path: "/y-webrtc",
    params: [],
    make: (options) => new YWebrtcHub(options),
  },
  peerjs: {
    path: "/peerjs",
    params: ["key", "id", "token"],
    make: (options) => new PeerJsHub(options),
  },
  nostr: {
    path: "/nostr",
    params: [],
    make: (options) => new NostrHub(options),
  },
};

/** A dialect socket as the upgrade admitted it. */
export interface CompatAdmission {
  /** Which dialect. */
  dialect: CompatDialect;
  /** Its namespace (`namespaceOf` its page's origin). */
  namespace: string;
  /** The query parameters its dialect reads ({@linkcode DialectRow.params}). */
  params: Record<string, string>;
}

/** What the dialect hubs share. */
export interface DialectsOptions {
  /** The dialects that are on. */
  on: readonly CompatDialect[];
  /** The signaling limits. */
  limits: SignalingLimits;
  /** The broker's socket hub. */
  sockets: SocketHub;
  /** The bus's dialect part; absent, topics and ids are this broker's. */
  bus?: CompatBus | undefined;
  /** Log sink. */
  logger?: Logger | undefined;
  /** Told of each relayed and each refused frame (the metrics). */
  observer?: CompatObserver | undefined;
}

/** The dialect hubs of one broker. */
export class Dialects {
  readonly #hubs = new Map<CompatDialect, CompatHub<CompatSocket>>();

  /**
   * Makes a hub for each dialect that is on, all on one set of relays.
   *
   * @param options The dialects that are on, and what they share.
   */
  constructor({ on, bus, ...shared }: DialectsOptions) {
    const relays = bus === undefined
      ? soloRelays()
      : createCompatRelays(bus, shared.logger);
    for (const dialect of on) {
      this.#hubs.set(dialect, DIALECTS[dialect].make({ ...shared, relays }));
    }
  }

  /** The dialects that are on, in the table's order. */
  get on(): CompatDialect[] {
    return [...this.#hubs.keys()];
  }

  /** Open sockets of each dialect that is on. */
  counts(): Partial<Record<CompatDialect, number>> {
    const counts: Partial<Record<CompatDialect, number>> = {};
    for (const [dialect, hub] of this.#hubs) counts[dialect] = hub.sockets;
    return counts;
  }

  /** Each dialect that is on, with its live figures (for `/health`). */
  health(): Partial<Record<CompatDialect, Record<string, number>>> {
    const figures: Partial<Record<CompatDialect, Record<string, number>>> = {};
    for (const [dialect, hub] of this.#hubs) figures[dialect] = hub.stats;
    return figures;
  }

  /**
   * Gives an admitted dialect socket to its hub.
   *
   * @param socket The upgraded socket.
   * @param origin Its `Origin`, or null.
   * @param admission What the upgrade admitted.
   * @returns The callbacks of its events.
   */
  connect(
    socket: PeerSocket,
    origin: string | null,
    { dialect, namespace, params }: CompatAdmission,
  ): CompatClient {
    const hub = this.#hubs.get(dialect);
    if (hub === undefined) {
      throw new RangeError(`Cannot connect a '${dialect}' socket: it is off`);
    }
    return hub.connect(socket, origin, namespace, params);
  }
}
