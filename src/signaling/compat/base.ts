/**
 * What the dialect hubs (`/y-webrtc`, `/peerjs`, `/nostr`) add to the broker's one
 * {@linkcode SocketHub}: their name, their error frame and their metrics.
 * A dialect hub is a {@linkcode SocketDialect}: the socket hub holds its
 * sockets and keeps every shared rule (frame limit, rate, slow reader,
 * close); the dialect hub adds its own frames on top, through the helpers
 * below.
 *
 * @module
 */

import type { Logger } from "../../_util/log.ts";
import {
  type HubSocket,
  type SocketDialect,
  type SocketEvents,
  SocketHub,
} from "../socket_hub.ts";
import type { PeerSocket, SignalingLimits } from "../types.ts";
import type { CompatDialect } from "./limits.ts";
import { type CompatRelays, soloRelays } from "./relays.ts";

/** What a dialect hub reports as it relays (a `Metrics` is one). */
export interface CompatObserver {
  /**
   * Frames were relayed to sockets.
   *
   * @param dialect The dialect.
   * @param frames How many sockets got a frame.
   */
  compatRelayed(dialect: CompatDialect, frames: number): void;
  /**
   * A client's frame (or connection) was refused.
   *
   * @param dialect The dialect.
   * @param code Why (`forged_from`, `rate_limited`, ...).
   */
  compatRefused(dialect: CompatDialect, code: string): void;
}

/** Options of a dialect hub. */
export interface CompatHubOptions {
  /** The limits of the signaling protocol, which the dialects keep too. */
  limits: SignalingLimits;
  /** Log sink. */
  logger?: Logger | undefined;
  /** Told of each relayed and each refused frame. */
  observer?: CompatObserver | undefined;
  /** The broker's socket hub; a hub of its own when absent. */
  sockets?: SocketHub | undefined;
  /**
   * What carries topics and ids to the other brokers (on the bus);
   * absent, the hub's are its own ({@linkcode soloRelays}).
   */
  relays?: CompatRelays | undefined;
}

/** What an adapter calls for one socket's events. */
export type CompatClient = SocketEvents;

/** A socket of a dialect hub. */
export interface CompatSocket extends HubSocket {
  /** The namespace of its topics or ids. */
  readonly namespace: string;
}

/** The fields every socket of a dialect hub starts with. */
export type CompatSocketInit = Pick<
  CompatSocket,
  "socket" | "origin" | "namespace"
>;

/**
 * The part of a dialect hub that is the same for every dialect.
 */
export abstract class CompatHub<S extends CompatSocket>
  implements SocketDialect<S> {
  /** The dialect, for the metrics. */
  abstract readonly dialect: CompatDialect;
  /** The limits. */
  protected readonly limits: SignalingLimits;
  /** The log sink. */
  protected readonly logger: Logger | undefined;
  /** The observer. */
  protected readonly observer: CompatObserver | undefined;
  /** Carries topics and ids across brokers (or keeps them here). */
  protected readonly relays: CompatRelays;
  /** The socket hub that holds this dialect's sockets. */
  readonly #sockets: SocketHub;

  /**
   * @param options The limits, a logger, an observer and the socket hub.
   */
  constructor(options: CompatHubOptions) {
    this.limits = options.limits;
    this.logger = options.logger;
    this.observer = options.observer;
    this.relays = options.relays ?? soloRelays();
    this.#sockets = options.sockets ??
      new SocketHub({ limits: options.limits, logger: options.logger });
  }

  /** The dialect's name, as the socket hub counts its sockets. */
  get name(): string {
    return this.dialect;
  }

  /** Open sockets of this dialect. */
  get sockets(): number {
    return this.#sockets.socketsOf(this.dialect);
  }

  /** Live figures for `/health`: `sockets`, and the dialect's own. */
  abstract readonly stats: Record<string, number>;

  /** The state every socket starts with, plus a full bucket. */
  protected initial(init: CompatSocketInit): CompatSocket {
    return {
      ...this.#sockets.initial(init.socket, init.origin),
      namespace: init.namespace,
    };
  }

  /** Registers a socket's state and returns the callbacks of its events. */
  protected register(state: S): CompatClient {
    return this.#sockets.open(this, state);
  }

  /**
   * Registers an upgraded socket of this dialect.
   *
   * @param socket The socket.
   * @param origin Its `Origin`, or null.
   * @param namespace Its namespace (`namespaceOf`).
   * @param params The query parameters the dialect reads.
   * @returns The callbacks of its events.
   */
  abstract connect(
    socket: PeerSocket,
    origin: string | null,
    namespace: string,
    params: Record<string, string>,
  ): CompatClient;

  /** @inheritdoc */
  abstract text(state: S, text: string): void;

  /** @inheritdoc */
  abstract leave(state: S, shutdown: boolean): void;

  /** @inheritdoc */
  abstract errorFrame(code: string, message: string): string;

  /** Counts a refusal sent as an error frame. */
  refused(code: string): void {
    this.observer?.compatRefused(this.dialect, code);
  }

  /** Counts a frame dropped, or a socket closed, by a limit. */
  cut(code: string): void {
    this.observer?.compatRefused(this.dialect, code);
  }

  /**
   * Takes `cost` tokens for a frame (see {@linkcode SocketHub.take}).
   *
   * @returns True when the frame may go ahead.
   */
  protected takeTokens(state: S, cost: number): boolean {
    return this.#sockets.take(state, cost);
  }

  /** Counts a refusal and sends the dialect's error frame. */
  protected refuse(state: S, code: string, message: string): void {
    this.#sockets.refuse(state, code, message);
  }

  /** Counts frames relayed to `count` sockets. */
  protected relayed(count: number): void {
    if (count > 0) this.observer?.compatRelayed(this.dialect, count);
  }

  /** Sends one frame (see {@linkcode SocketHub.send}). */
  protected send(state: S, text: string): void {
    this.#sockets.send(state, text);
  }

  /** Forgets the socket, then asks it to close. */
  protected close(state: S, code: number, reason: string): void {
    this.#sockets.close(state, code, reason);
  }
}
