/**
 * What the two dialect hubs (`/y-webrtc`, `/peerjs`) share with each other
 * and with the hub of `/signal`: the live sockets and their origins, the
 * frame limit, the token bucket (a frame may cost several tokens), the
 * slow-reader rule, closing with a deadline, and how a refused frame is
 * counted. A dialect hub adds its own frames on top.
 *
 * @module
 */

import type { Logger } from "../../_util/log.ts";
import { CLOSE_CODES, closeWithDeadline } from "../close.ts";
import { exceedsBytes } from "../messages.ts";
import { type Bucket, RateLimit } from "../rate_limit.ts";
import type { PeerSocket, SignalingLimits } from "../types.ts";
import type { CompatDialect } from "./limits.ts";

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
}

/** What an adapter calls for one socket's events. */
export interface CompatClient {
  /** A frame arrived: text, or bytes for a binary frame. */
  message(data: string | Uint8Array): void;
  /** The socket closed (by either side); forgets it everywhere. Idempotent. */
  closed(): void;
}

/** A socket of a dialect hub. */
export interface CompatSocket extends Bucket {
  /** The socket. */
  readonly socket: PeerSocket;
  /** Its `Origin` header, or null. */
  readonly origin: string | null;
  /** The namespace of its topics or ids. */
  readonly namespace: string;
  /** Whether it is being closed (nothing more is sent or read). */
  closing: boolean;
  /** Whether its close event came. */
  gone: boolean;
  /** The deadline of its closing handshake. */
  closeTimer: ReturnType<typeof setTimeout> | undefined;
}

/** The fields every socket of a dialect hub starts with. */
export type CompatSocketInit = Pick<
  CompatSocket,
  "socket" | "origin" | "namespace"
>;

/**
 * The part of a dialect hub that is the same for both dialects.
 */
export abstract class CompatHub<S extends CompatSocket> {
  /** The dialect, for the metrics. */
  abstract readonly dialect: CompatDialect;
  /** The limits. */
  protected readonly limits: SignalingLimits;
  /** The log sink. */
  protected readonly logger: Logger | undefined;
  /** The observer. */
  protected readonly observer: CompatObserver | undefined;
  #rate: RateLimit;
  #live = new Set<S>();
  #origins = new Map<string, number>();
  #drained: (() => void)[] = [];

  /**
   * @param options The limits, a logger and an observer.
   */
  constructor(options: CompatHubOptions) {
    this.limits = options.limits;
    this.logger = options.logger;
    this.observer = options.observer;
    this.#rate = new RateLimit(
      this.limits.rateLimitBurst,
      this.limits.rateLimitPerSecond,
    );
  }

  /** Open sockets. */
  get sockets(): number {
    return this.#live.size;
  }

  /** Live figures for `/health`: `sockets`, and the dialect's own. */
  abstract readonly stats: Record<string, number>;

  /** The `Origin` values of the open sockets (unsorted, each once). */
  get origins(): Iterable<string> {
    return this.#origins.keys();
  }

  /** Closes every socket with 1001 (going away). */
  closeAll(): void {
    for (const state of this.#live) state.closing = true;
    for (const state of this.#live) {
      this.leave(state, true);
      this.#closeSocket(state, CLOSE_CODES.goingAway, "Server shutting down");
    }
  }

  /** Resolves once no socket is open. */
  drained(): Promise<void> {
    if (this.#live.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  /** The state every socket starts with, plus a full bucket. */
  protected initial(init: CompatSocketInit): CompatSocket {
    return {
      ...this.#rate.bucket(),
      ...init,
      closing: false,
      gone: false,
      closeTimer: undefined,
    };
  }

  /** Registers a socket's state and returns the callbacks of its events. */
  protected register(state: S): CompatClient {
    this.#live.add(state);
    if (state.origin !== null) {
      this.#origins.set(
        state.origin,
        (this.#origins.get(state.origin) ?? 0) + 1,
      );
    }
    return {
      message: (data) => this.#onMessage(state, data),
      closed: () => this.#onClosed(state),
    };
  }

  /**
   * Handles one text frame within the frame limit. It must take the
   * frame's tokens (`takeTokens`) once, before it acts: one, or one for
   * each socket the frame reaches.
   */
  protected abstract onText(state: S, text: string): void;

  /**
   * Forgets `state` everywhere (topics, ids). Idempotent.
   *
   * @param shutdown True when the broker is shutting down: the others are
   * not told (the broker leaves, not they).
   */
  protected abstract leave(state: S, shutdown: boolean): void;

  /** The dialect's frame for a refusal. */
  protected abstract errorFrame(code: string, message: string): string;

  /**
   * Takes `cost` tokens for a frame; an empty bucket refuses it with one
   * `rate_limited` notice, and a further burst of refused frames closes.
   *
   * @returns True when the frame may go ahead.
   */
  protected takeTokens(state: S, cost: number): boolean {
    const verdict = this.#rate.take(state, Date.now(), cost);
    if (verdict === "warn") {
      this.refuse(
        state,
        "rate_limited",
        "Cannot accept the frame: too many messages, slow down",
      );
    } else if (verdict === "close") {
      this.observer?.compatRefused(this.dialect, "rate_limited");
      this.close(state, CLOSE_CODES.policyViolation, "Rate limit exceeded");
    } else if (verdict === "drop") {
      this.observer?.compatRefused(this.dialect, "rate_limited");
    }
    return verdict === "accept";
  }

  /** Counts a refusal and sends the dialect's error frame. */
  protected refuse(state: S, code: string, message: string): void {
    this.observer?.compatRefused(this.dialect, code);
    this.send(state, this.errorFrame(code, message));
  }

  /** Counts frames relayed to `count` sockets. */
  protected relayed(count: number): void {
    if (count > 0) this.observer?.compatRelayed(this.dialect, count);
  }

  /**
   * Sends one frame; a socket whose unsent bytes pass `maxBufferedBytes` is
   * closed with 1013, so that it cannot make the broker buffer without
   * limit.
   */
  protected send(state: S, text: string): void {
    if (state.closing) return;
    try {
      state.socket.send(text);
    } catch {
      return;
    }
    const buffered = state.socket.bufferedAmount?.() ?? 0;
    if (buffered > this.limits.maxBufferedBytes) {
      this.close(state, CLOSE_CODES.tryAgainLater, "Too slow to read");
    }
  }

  /** Forgets the socket, then asks it to close. */
  protected close(state: S, code: number, reason: string): void {
    if (state.closing) return;
    state.closing = true;
    this.leave(state, false);
    this.#closeSocket(state, code, reason);
  }

  #closeSocket(state: S, code: number, reason: string): void {
    state.closeTimer = closeWithDeadline(
      state.socket,
      code,
      reason,
      () => state.gone,
      (error) => this.logger?.("debug", "Socket close failed", { error }),
    );
  }

  #onMessage(state: S, data: string | Uint8Array): void {
    if (state.closing) return;
    if (exceedsBytes(data, this.limits.maxFrameBytes)) {
      this.observer?.compatRefused(this.dialect, "frame_too_large");
      this.close(state, CLOSE_CODES.messageTooBig, "Frame too large");
      return;
    }
    if (typeof data !== "string") {
      if (!this.takeTokens(state, 1)) return;
      this.refuse(
        state,
        "bad_message",
        "Cannot accept the frame: frames must be JSON text",
      );
      return;
    }
    this.onText(state, data);
  }

  #onClosed(state: S): void {
    if (state.gone) return;
    state.gone = true;
    clearTimeout(state.closeTimer);
    state.closing = true;
    // After closeAll this is a no-op: it left already.
    this.leave(state, false);
    this.#live.delete(state);
    if (state.origin !== null) {
      const count = this.#origins.get(state.origin)! - 1;
      if (count === 0) this.#origins.delete(state.origin);
      else this.#origins.set(state.origin, count);
    }
    if (this.#live.size === 0) {
      for (const resolve of this.#drained.splice(0)) resolve();
    }
  }
}
