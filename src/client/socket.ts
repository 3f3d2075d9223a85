/**
 * The client's side of the broker's signaling WebSocket: it joins the
 * session on every (re)connection, reconnects with jittered exponential
 * backoff, and paces what it sends with a token bucket a little under the
 * broker's (100 burst, 50 a second), so a newcomer offering to a big
 * session never trips its flood guard.
 *
 * @module
 */

/** The `data` of a `signal` frame: one description or one candidate. */
export interface SignalData {
  /** An offer, an answer or a rollback. */
  sdp?: RTCSessionDescriptionInit;
  /** A trickled ICE candidate. */
  candidate?: RTCIceCandidateInit | null;
}

/** A frame from the broker (protocol version 1 and its additions). */
export interface BrokerFrame {
  /** `joined`, `peer-joined`, `peer-left`, `signal`, `ice` or `error`. */
  type: string;
  /** This socket's peer id (`joined`), or the peer that came or went. */
  peerId?: string;
  /** The other members (`joined`). */
  peers?: string[];
  /** ICE servers for this peer (`joined`, `ice`). */
  iceServers?: RTCIceServer[];
  /** The sender of a `signal`. */
  from?: string;
  /** The payload of a `signal`. */
  data?: SignalData;
  /** An error's code. */
  code?: string;
  /** An error's message. */
  message?: string;
}

/** Tokens in the bucket (the broker allows 100). */
const BURST = 80;
/** Tokens a millisecond (the broker refills 50 a second). */
const RATE = 0.04;
/** The first reconnection delay; it doubles up to {@linkcode MAX_DELAY}. */
const FIRST_DELAY = 250;
/** The longest reconnection delay. */
const MAX_DELAY = 10_000;

/**
 * One session's signaling connection, reopened until {@linkcode close}.
 * Frames sent while the socket is down are dropped: a rejoin gives a new
 * peer id, so they would be addressed to ids that no longer exist.
 */
export class Signaling {
  #url: string;
  #session: string;
  #frame: (frame: BrokerFrame) => void;
  #down: (code: number) => void;
  #ws: WebSocket | null = null;
  #out: string[] = [];
  #tokens = BURST;
  #at = 0;
  #pumpTimer: ReturnType<typeof setTimeout> | undefined;
  #retryTimer?: ReturnType<typeof setTimeout>;
  #retries = 0;
  #closed = false;

  /**
   * Connects at once.
   *
   * @param url The broker's `ws:` or `wss:` signaling URL.
   * @param session The session to join.
   * @param frame Called with each parsed frame.
   * @param down Called with the close code each time the socket closes.
   */
  constructor(
    url: string,
    session: string,
    frame: (frame: BrokerFrame) => void,
    down: (code: number) => void,
  ) {
    this.#url = url;
    this.#session = session;
    this.#frame = frame;
    this.#down = down;
    this.#connect();
  }

  /** Queues one frame; dropped when the socket is not open. */
  send(frame: object): void {
    if (this.#ws?.readyState !== 1) return;
    this.#out.push(JSON.stringify(frame));
    this.#pump();
  }

  /** Closes the socket for good. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#pumpTimer);
    this.#ws?.close(1000);
  }

  #connect(): void {
    const ws = new WebSocket(this.#url);
    this.#ws = ws;
    ws.onopen = () => this.send({ type: "join", session: this.#session });
    ws.onmessage = (event) => {
      let frame: BrokerFrame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      if (frame.type === "joined") this.#retries = 0;
      this.#frame(frame);
    };
    // "close" also follows "error", so this is the one place that retries.
    ws.onclose = (event) => {
      this.#ws = null;
      this.#out = [];
      this.#down(event.code);
      if (this.#closed) return;
      const delay = Math.min(MAX_DELAY, FIRST_DELAY * 2 ** this.#retries++);
      this.#retryTimer = setTimeout(
        () => this.#connect(),
        delay * (0.5 + Math.random() / 2),
      );
    };
  }

  #pump(): void {
    const ws = this.#ws;
    const now = performance.now();
    this.#tokens = Math.min(BURST, this.#tokens + (now - this.#at) * RATE);
    this.#at = now;
    while (ws && this.#out.length && this.#tokens >= 1) {
      ws.send(this.#out.shift()!);
      this.#tokens--;
    }
    if (this.#out.length && !this.#pumpTimer) {
      this.#pumpTimer = setTimeout(() => {
        this.#pumpTimer = undefined;
        this.#pump();
      }, 50);
    }
  }
}
