/**
 * The one socket hub of a broker: every WebSocket it holds, whatever its
 * dialect (`/signal`, `/y-webrtc`, `/peerjs`), and every rule they share,
 * written once: the origin rule and the socket cap (admission), the frame
 * limit, the token bucket (a frame may cost several tokens), binary frames
 * refused, the slow-reader rule, closing with a deadline, draining (one
 * socket at a time, spread over a window) or closing all at shutdown and
 * waiting for them, and the live totals. A dialect is its
 * frames and its state ({@linkcode SocketDialect}): it never keeps a socket
 * list, a rate or a close of its own.
 *
 * @module
 */

import type { Logger } from "../_util/log.ts";
import { CLOSE_CODES, closeWithDeadline } from "./close.ts";
import { exceedsBytes } from "./messages.ts";
import { type Bucket, RateLimit } from "./rate_limit.ts";
import type { PeerSocket, SignalingLimits } from "./types.ts";

/** What an adapter calls for one socket's events. */
export interface SocketEvents {
  /** A frame arrived: text, or bytes for a binary frame. */
  message(data: string | Uint8Array): void;
  /**
   * The socket closed (by either side), with `code` when the adapter knows
   * it; forgets it everywhere. Idempotent.
   */
  closed(code?: number): void;
}

/** One socket of the hub: the fields every dialect's socket starts with. */
export interface HubSocket extends Bucket {
  /** The socket. */
  readonly socket: PeerSocket;
  /** Its `Origin` header, or null. */
  readonly origin: string | null;
  /** Whether it is being closed (nothing more is sent or read). */
  closing: boolean;
  /** Whether its close event came. */
  gone: boolean;
  /** The deadline of its closing handshake. */
  closeTimer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * A dialect: the frames of one protocol over the hub's sockets, and what it
 * reports. The hub calls it; it calls the hub to send, refuse, take tokens
 * and close.
 */
export interface SocketDialect<S extends HubSocket> {
  /** Its name, as the totals count its sockets (`signal`, `y-webrtc`...). */
  readonly name: string;
  /**
   * Handles one text frame within the frame limit. It takes the frame's
   * tokens ({@linkcode SocketHub.take}) once, before it acts.
   */
  text(state: S, text: string): void;
  /**
   * Forgets `state` everywhere (sessions, topics, ids). Idempotent.
   *
   * @param shutdown True when the broker is shutting down: the others are
   * not told (the broker leaves, not they).
   * @param code How the socket closed or is being closed, when known (a
   * dialect may keep the place of one that went away: 1006, 1012).
   */
  leave(state: S, shutdown: boolean, code?: number): void;
  /** The dialect's frame for a refusal. */
  errorFrame(code: string, message: string): string;
  /** Told of each refusal sent as an error frame (for the metrics). */
  refused?(code: string): void;
  /** Told of each frame dropped, or socket closed, by a limit. */
  cut?(code: string): void;
  /**
   * The broker is shutting down, and every socket has left: forgets what
   * outlives a socket (an id waiting for its owner to come back).
   */
  shutdown?(): void;
  /**
   * The dialect's frame telling a socket that the broker is restarting and
   * that it should connect again, sent just before a drain closes it with
   * 1012; without one (or when it gives undefined) the socket is only
   * closed.
   */
  reconnectFrame?(): string | undefined;
}

/** A drain under way: the sockets still to close, one per turn. */
interface Drain {
  readonly queue: HubSocket[];
  /** Milliseconds between two turns. */
  readonly gap: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Sockets told to reconnect, each until its close, with its timer. */
  readonly told: Map<HubSocket, ReturnType<typeof setTimeout>>;
}

/**
 * How long a drained socket is still read after its reconnect frame, before
 * its 1012 (at most half a turn): what its client sent before it heard is
 * handled, not lost.
 */
const DRAIN_GRACE_MS = 250;

/** A socket of the hub with the dialect it speaks. */
interface Entry {
  readonly state: HubSocket;
  // deno-lint-ignore no-explicit-any
  readonly dialect: SocketDialect<any>;
}

/**
 * Holds every socket of one broker.
 *
 * @example Two dialects, one total
 * ```ts
 * import assert from "node:assert/strict";
 * import { SocketHub } from "./socket_hub.ts";
 *
 * const hub = new SocketHub({
 *   limits: {
 *     maxFrameBytes: 65_536,
 *     maxPeersPerSession: 32,
 *     maxSockets: 10_000,
 *     joinTimeoutMs: 10_000,
 *     rateLimitBurst: 100,
 *     rateLimitPerSecond: 50,
 *     maxBufferedBytes: 1_048_576,
 *     allowedOrigins: null,
 *   },
 * });
 * const echo = {
 *   name: "echo",
 *   text: (state: ReturnType<typeof hub.initial>, text: string) => {
 *     if (hub.take(state, 1)) hub.send(state, text);
 *   },
 *   leave: () => {},
 *   errorFrame: (code: string) => code,
 * };
 * const sent: string[] = [];
 * const state = hub.initial({ send: (t) => sent.push(t), close() {} }, null);
 * const events = hub.open(echo, state);
 * events.message("hi");
 * assert.deepEqual(sent, ["hi"]);
 * assert.equal(hub.sockets, 1);
 * events.closed();
 * assert.equal(hub.sockets, 0);
 * ```
 */
export class SocketHub {
  readonly #limits: SignalingLimits;
  readonly #logger: Logger | undefined;
  readonly #rate: RateLimit;
  readonly #live = new Map<HubSocket, Entry>();
  readonly #origins = new Map<string, number>();
  readonly #byDialect = new Map<string, number>();
  // deno-lint-ignore no-explicit-any
  readonly #dialects = new Set<SocketDialect<any>>();
  #drained: (() => void)[] = [];
  #drain: Drain | undefined;

  /**
   * Makes an empty hub.
   *
   * @param options The limits of the signaling protocol, which every
   * dialect keeps, and a log sink.
   */
  constructor(
    options: { limits: SignalingLimits; logger?: Logger | undefined },
  ) {
    this.#limits = options.limits;
    this.#logger = options.logger;
    this.#rate = new RateLimit(
      this.#limits.rateLimitBurst,
      this.#limits.rateLimitPerSecond,
    );
  }

  /** The limits every dialect keeps. */
  get limits(): SignalingLimits {
    return this.#limits;
  }

  /** Open sockets, of every dialect. */
  get sockets(): number {
    return this.#live.size;
  }

  /**
   * Open sockets of one dialect.
   *
   * @param name The dialect's name.
   */
  socketsOf(name: string): number {
    return this.#byDialect.get(name) ?? 0;
  }

  /** The `Origin` values of the open sockets, sorted, each once. */
  get origins(): string[] {
    return [...this.#origins.keys()].sort();
  }

  /** Whether one more socket is within `maxSockets`. */
  hasRoom(): boolean {
    return this.#live.size < this.#limits.maxSockets;
  }

  /** Whether `origin` (the literal "null" included) may connect. */
  isOriginAllowed(origin: string | null): boolean {
    const allowed = this.#limits.allowedOrigins;
    return allowed === null || (origin !== null && allowed.includes(origin));
  }

  /**
   * The fields a socket's state starts with: a full bucket, open.
   *
   * @param socket The socket.
   * @param origin Its `Origin` header, or null.
   */
  initial(socket: PeerSocket, origin: string | null): HubSocket {
    return {
      ...this.#rate.bucket(),
      socket,
      origin,
      closing: false,
      gone: false,
      closeTimer: undefined,
    };
  }

  /**
   * Holds a freshly upgraded socket, speaking `dialect`.
   *
   * @param dialect Its dialect.
   * @param state Its state, made from {@linkcode SocketHub.initial}.
   * @returns The callbacks of its events.
   */
  open<S extends HubSocket>(dialect: SocketDialect<S>, state: S): SocketEvents {
    this.#live.set(state, { state, dialect });
    this.#dialects.add(dialect);
    // Admitted before a drain began, opened after: it takes the next turn.
    if (this.#drain !== undefined) {
      this.#drain.queue.push(state);
      this.#drain.timer ??= setTimeout(() => this.#turn(), this.#drain.gap);
    }
    this.#byDialect.set(dialect.name, this.socketsOf(dialect.name) + 1);
    if (state.origin !== null) {
      this.#origins.set(
        state.origin,
        (this.#origins.get(state.origin) ?? 0) + 1,
      );
    }
    return {
      message: (data) => this.#onMessage(state, data),
      closed: (code) => this.#onClosed(state, code),
    };
  }

  /**
   * Takes `cost` tokens for a frame; an empty bucket refuses it with one
   * `rate_limited` notice, and a further burst of refused frames closes.
   *
   * @returns True when the frame may go ahead.
   */
  take(state: HubSocket, cost: number): boolean {
    const verdict = this.#rate.take(state, Date.now(), cost);
    if (verdict === "warn") {
      this.refuse(
        state,
        "rate_limited",
        "Cannot accept the frame: too many messages, slow down",
      );
    } else if (verdict === "close") {
      this.#dialectOf(state)?.cut?.("rate_limited");
      this.close(state, CLOSE_CODES.policyViolation, "Rate limit exceeded");
    } else if (verdict === "drop") {
      this.#dialectOf(state)?.cut?.("rate_limited");
    }
    return verdict === "accept";
  }

  /** Sends the dialect's error frame, and reports the refusal. */
  refuse(state: HubSocket, code: string, message: string): void {
    const dialect = this.#dialectOf(state);
    if (dialect === undefined) return;
    dialect.refused?.(code);
    this.send(state, dialect.errorFrame(code, message));
  }

  /**
   * Sends one frame; a socket whose unsent bytes pass `maxBufferedBytes` is
   * a slow reader: closed with 1013, so that it cannot make the broker
   * buffer without limit.
   */
  send(state: HubSocket, text: string): void {
    if (state.closing) return;
    try {
      state.socket.send(text);
    } catch {
      // A socket that is already closing cannot send; its close event follows.
      return;
    }
    const buffered = state.socket.bufferedAmount?.() ?? 0;
    if (buffered > this.#limits.maxBufferedBytes) {
      this.close(state, CLOSE_CODES.tryAgainLater, "Too slow to read");
    }
  }

  /**
   * Leaves at once (the others are told, as the dialect tells them), then
   * asks the socket to close; its close event comes later.
   */
  close(state: HubSocket, code: number, reason: string): void {
    if (state.closing) return;
    state.closing = true;
    this.#dialectOf(state)?.leave(state, false, code);
    this.#closeSocket(state, code, reason);
  }

  /**
   * Drains: each open socket gets its dialect's reconnect frame and, a
   * moment later (what its client sent meanwhile still handled), is closed
   * with 1012 (service restart), one at a time, the i-th of n at about
   * i × `windowMs` / n, so that their reconnects reach the other brokers
   * spread out, not as a herd. Each one leaves as it goes (the others are
   * told, as its dialect tells them). A socket that left by itself keeps
   * its turn empty; one opened meanwhile takes a turn after the others.
   * A window of 0 closes them all at once, as {@linkcode closeAll} does.
   * Idempotent; {@linkcode drained} says when the last one is gone.
   *
   * @param windowMs The window the closes are spread over.
   */
  drain(windowMs: number): void {
    if (this.#drain !== undefined) return;
    const queue = [...this.#live.keys()];
    if (windowMs <= 0 || queue.length === 0) {
      this.#drain = { queue: [], gap: 0, timer: undefined, told: new Map() };
      this.closeAll(CLOSE_CODES.serviceRestart);
      return;
    }
    // The last one's grace ends within the window too.
    const gap = Math.max(windowMs - DRAIN_GRACE_MS, windowMs / 2) /
      queue.length;
    this.#drain = { queue, gap, timer: undefined, told: new Map() };
    this.#turn();
  }

  /**
   * Closes every socket still open at once, with 1001 (going away) unless
   * told otherwise, and ends a drain; a 1012 close is preceded by the
   * dialect's reconnect frame. Nobody is told of anyone's departure: the
   * broker is leaving, not they, and their data channels live on without
   * it.
   *
   * @param code The close code: `goingAway` or `serviceRestart`.
   */
  closeAll(code: number = CLOSE_CODES.goingAway): void {
    const told = this.#drain?.told;
    this.#endDrain();
    const open = [...this.#live.values()].filter(({ state }) => !state.closing);
    if (code === CLOSE_CODES.serviceRestart) {
      for (const { state, dialect } of open) {
        if (!told?.has(state)) this.#sendReconnect(state, dialect);
      }
    }
    for (const { state } of open) state.closing = true;
    for (const { state, dialect } of open) {
      dialect.leave(state, true, code);
      this.#closeSocket(state, code, "Server shutting down");
    }
    for (const dialect of this.#dialects) dialect.shutdown?.();
  }

  /** Resolves once no socket is open. */
  drained(): Promise<void> {
    if (this.#live.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  #dialectOf(state: HubSocket) {
    return this.#live.get(state)?.dialect;
  }

  // One turn of a drain: the next socket in line, unless it left already.
  #turn(): void {
    const drain = this.#drain!;
    drain.timer = undefined;
    const state = drain.queue.shift();
    const entry = state && this.#live.get(state);
    if (entry !== undefined && !entry.state.closing) {
      const { state } = entry;
      this.#sendReconnect(state, entry.dialect);
      drain.told.set(
        state,
        setTimeout(() => {
          this.close(state, CLOSE_CODES.serviceRestart, "Service restart");
        }, Math.min(DRAIN_GRACE_MS, drain.gap / 2)),
      );
    }
    if (drain.queue.length > 0) {
      drain.timer = setTimeout(() => this.#turn(), drain.gap);
    }
  }

  // deno-lint-ignore no-explicit-any
  #sendReconnect(state: HubSocket, dialect: SocketDialect<any>): void {
    const frame = dialect.reconnectFrame?.();
    if (frame !== undefined) this.send(state, frame);
  }

  // No more turns (a drain stays begun: it is not begun twice).
  #endDrain(): void {
    if (this.#drain === undefined) return;
    clearTimeout(this.#drain.timer);
    this.#drain.timer = undefined;
    this.#drain.queue.length = 0;
    for (const timer of this.#drain.told.values()) clearTimeout(timer);
    this.#drain.told.clear();
  }

  #closeSocket(state: HubSocket, code: number, reason: string): void {
    state.closeTimer = closeWithDeadline(
      state.socket,
      code,
      reason,
      () => state.gone,
      (error) => this.#logger?.("debug", "Socket close failed", { error }),
    );
  }

  #onMessage(state: HubSocket, data: string | Uint8Array): void {
    if (state.closing) return;
    const dialect = this.#dialectOf(state);
    if (dialect === undefined) return;
    if (exceedsBytes(data, this.#limits.maxFrameBytes)) {
      dialect.cut?.("frame_too_large");
      this.close(state, CLOSE_CODES.messageTooBig, "Frame too large");
      return;
    }
    if (typeof data !== "string") {
      if (!this.take(state, 1)) return;
      this.refuse(
        state,
        "bad_message",
        "Cannot accept the frame: frames must be JSON text",
      );
      return;
    }
    dialect.text(state, data);
  }

  #onClosed(state: HubSocket, code?: number): void {
    if (state.gone) return;
    state.gone = true;
    clearTimeout(state.closeTimer);
    state.closing = true;
    const entry = this.#live.get(state);
    if (entry === undefined) return;
    // After closeAll this is a no-op: it left already.
    entry.dialect.leave(state, false, code);
    this.#live.delete(state);
    const name = entry.dialect.name;
    this.#byDialect.set(name, this.socketsOf(name) - 1);
    if (state.origin !== null) {
      const count = this.#origins.get(state.origin)! - 1;
      if (count === 0) this.#origins.delete(state.origin);
      else this.#origins.set(state.origin, count);
    }
    if (this.#live.size === 0) {
      this.#endDrain();
      for (const resolve of this.#drained.splice(0)) resolve();
    }
  }
}
