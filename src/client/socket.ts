/**
 * The client's side of the broker's signaling WebSocket: it joins the
 * session on every (re)connection (resuming its place when it can), asks
 * for fresh ICE servers before their TURN credentials expire, reconnects
 * with jittered exponential backoff (or, when a draining broker says
 * `reconnect` or closes with 1012, after a random delay of up to 2 s, so
 * that its peers do not all come back at once), and paces what it sends
 * with a token bucket a little under the broker's (100 burst, 50 a
 * second), so a newcomer offering to a big session never trips its flood
 * guard.
 *
 * @module
 */

/** The `data` of a `signal` frame: one description or one candidate. */
export interface SignalData {
  /** An offer, an answer or a rollback. */
  sdp?: RTCSessionDescriptionInit;
  /** A trickled ICE candidate. */
  candidate?: RTCIceCandidateInit | null;
  /** In a private room: a description or candidate, sealed. */
  sealed?: string;
}

/** A frame from the broker (protocol version 1 and its additions). */
export interface BrokerFrame {
  /**
   * `joined`, `peer-joined`, `peer-left`, `signal`, `ice`, `restart-ice` or
   * `error` (`reconnect` is the socket's own business).
   */
  type: string;
  /** This socket's peer id (`joined`), or the peer that came or went. */
  peerId?: string;
  /** The other members (`joined`), or whose signals were lost (`restart-ice`). */
  peers?: string[];
  /** The token that resumes this peer's place (`joined`). */
  resume?: string;
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
/** The longest delay before reconnecting to a broker that restarts. */
const RESTART_DELAY = 2_000;
/** The close code of a broker that restarts (a drain). */
const SERVICE_RESTART = 1012;

/**
 * One session's signaling connection, reopened until {@linkcode close}.
 * Each join after the first presents the last `joined`'s resume token, so
 * that the broker gives this peer its id and place back, with what was
 * sent to it meanwhile. Frames sent while the socket is down are dropped:
 * after a rejoin (the token was spent or too old: a new peer id) they would
 * be addressed to ids that no longer exist.
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
  #proof?: ((host: string) => Promise<object>) | undefined;
  #restart = false;
  #resume: string | undefined;
  #iceTimer: ReturnType<typeof setTimeout> | undefined;

  /**
   * Connects at once.
   *
   * @param url The broker's `ws:` or `wss:` signaling URL.
   * @param session The session to join.
   * @param frame Called with each parsed frame.
   * @param down Called with the close code each time the socket closes.
   * @param proof For a private session: the join's proof over a host.
   */
  constructor(
    url: string,
    session: string,
    frame: (frame: BrokerFrame) => void,
    down: (code: number) => void,
    proof?: (host: string) => Promise<object>,
  ) {
    this.#proof = proof;
    this.#url = url;
    this.#session = session;
    this.#frame = frame;
    this.#down = down;
    this.#connect();
  }

  /**
   * Queues one frame; dropped when the socket is not open, or the broker
   * said `reconnect` (it closes this socket next).
   */
  send(frame: object): void {
    if (this.#ws?.readyState !== 1 || this.#restart) return;
    this.#out.push(JSON.stringify(frame));
    this.#pump();
  }

  /** Closes the socket for good. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#pumpTimer);
    clearTimeout(this.#iceTimer);
    this.#ws?.close(1000);
  }

  #connect(): void {
    const ws = new WebSocket(this.#url);
    this.#ws = ws;
    // A private session's proof is made afresh for each join.
    ws.onopen = async () =>
      this.send({
        type: "join",
        session: this.#session,
        proof: await this.#proof?.(new URL(this.#url).host),
        resume: this.#resume,
      });
    ws.onmessage = (event) => {
      let frame: BrokerFrame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      if (frame.type === "joined") {
        this.#retries = 0;
        this.#resume = frame.resume;
      }
      if (frame.iceServers) this.#refreshIce(frame.iceServers);
      // The broker drains: it closes this socket next.
      if (frame.type === "reconnect") this.#restart = true;
      else this.#frame(frame);
    };
    // "close" also follows "error", so this is the one place that retries.
    ws.onclose = (event) => {
      this.#ws = null;
      this.#out = [];
      this.#down(event.code);
      if (this.#closed) return;
      // A drained broker's peers come back spread over RESTART_DELAY; after
      // a failure, the delay doubles, jittered.
      const delay = this.#restart || event.code === SERVICE_RESTART
        ? Math.random() * RESTART_DELAY
        : Math.min(MAX_DELAY, FIRST_DELAY * 2 ** this.#retries++) *
          (0.5 + Math.random() / 2);
      this.#restart = false;
      this.#retryTimer = setTimeout(() => this.#connect(), delay);
    };
  }

  // TURN usernames are "<unix expiry seconds>:<peerId>": ask again at 80%
  // of the shortest remaining lifetime.
  #refreshIce(servers: RTCIceServer[]): void {
    clearTimeout(this.#iceTimer);
    const left = Math.min(
      ...(Array.isArray(servers) ? servers : []).map((server) =>
        Number(/^(\d+):/.exec(server.username ?? "")?.[1] ?? Infinity) * 1000
      ),
    ) - Date.now();
    if (left > 0 && left < Infinity) {
      this.#iceTimer = setTimeout(
        () => this.send({ type: "ice" }),
        Math.max(1000, left * 0.8),
      );
    }
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
