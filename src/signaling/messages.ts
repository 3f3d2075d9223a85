/**
 * The client frames of signaling protocol version 1, and nothing else: a
 * `signal` carries exactly an SDP description or an ICE candidate, so the
 * broker is useless as a chat relay.
 *
 * @module
 */

import { RESUME_TOKEN } from "./bus/held.ts";

/** An SDP description, exactly as the protocol allows it. */
export interface SdpData {
  /** The session description. */
  sdp: { type: "offer" | "answer" | "pranswer" | "rollback"; sdp: string };
}

/** An ICE candidate, or null for the end of candidates. */
export interface CandidateData {
  /** The candidate. */
  candidate: {
    candidate: string;
    sdpMid?: string | null;
    sdpMLineIndex?: number | null;
    usernameFragment?: string | null;
  } | null;
}

/**
 * `sealed`: signaling sealed by the peers of a private session with a key
 * from the room's secret, base64url text the broker relays without reading.
 */
export interface SealedData {
  /** The sealed signal: 1 to {@linkcode MAX_SEALED} base64url characters. */
  sealed: string;
}

/**
 * The proof a join into a private (keyed) session carries: `sig` signs
 * `pod-room-v1\n<Host>\n<session>\n<t>` with the session's key.
 */
export interface JoinProof {
  /** The sender's clock, in Unix seconds. */
  t: number;
  /** The Ed25519 signature, base64url without padding. */
  sig: string;
}

/** A `join` frame: a session, and maybe a proof and a resume token. */
export interface JoinMessage {
  /** `join`. */
  type: "join";
  /** The session. */
  session: string;
  /** A private session's proof. */
  proof?: JoinProof;
  /** The token of an earlier `joined`, to resume its place. */
  resume?: string;
}

/** A frame a client may send. */
export type ClientMessage =
  | JoinMessage
  | { type: "signal"; to: string; data: SignalData }
  | { type: "ice" }
  | { type: "leave" };

/**
 * The data of a `signal` frame: an SDP description or an ICE candidate, or
 * in a private session a sealed signal.
 */
export type SignalData = SdpData | CandidateData | SealedData;

/** The most characters of a sealed signal's text. */
export const MAX_SEALED = 16_384;

// `k_` and the base64url of an Ed25519 public key (DESIGN.md section 10.2).
const KEYED = /^k_[A-Za-z0-9_-]{43}$/;
const SEALED = /^[A-Za-z0-9_-]+$/;

/**
 * Whether a session is private (keyed): `k_` and the 43 base64url
 * characters of an Ed25519 public key. Its joins need a proof, and only
 * its signals may be sealed.
 *
 * @param session A valid session name.
 * @returns True for a keyed session.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isKeyed } from "./messages.ts";
 *
 * assert.equal(isKeyed("k_" + "A".repeat(43)), true);
 * assert.equal(isKeyed("demo"), false);
 * ```
 */
export function isKeyed(session: string): boolean {
  return KEYED.test(session);
}

/**
 * How an error names a session: a private one is never named (its name
 * stays out of errors, which clients and proxies may log).
 *
 * @param session The session.
 * @returns `session "name"`, or `this private session`.
 */
export function sessionLabel(session: string): string {
  return isKeyed(session) ? "this private session" : `session "${session}"`;
}

/**
 * Whether signal data may travel in `session`: sealed data only in a
 * keyed one. The one place that decides it, for a client's frame and for
 * another broker's delivery alike.
 *
 * @param data Signal data of a valid shape.
 * @param session The session it travels in.
 * @returns True when it may be relayed.
 */
export function fitsSession(data: SignalData, session: string): boolean {
  return !("sealed" in data) || isKeyed(session);
}

/**
 * Every error code the hub sends in `{"type":"error"}` frames: the one list
 * (the metrics label their counter with it).
 */
export const SIGNAL_ERROR_CODES = [
  "bad_json",
  "bad_message",
  "not_joined",
  "already_joined",
  "bad_session",
  "session_full",
  "unknown_peer",
  "rate_limited",
  "room_locked",
] as const;

/** Error codes the hub sends in `{"type":"error"}` frames. */
export type SignalErrorCode = typeof SIGNAL_ERROR_CODES[number];

/** A refused frame: the code and a human message. */
export interface MessageError {
  /** The error code. */
  error: SignalErrorCode;
  /** What was wrong. */
  message: string;
}

const SESSION = /^[A-Za-z0-9_-]{1,128}$/;
const SDP_TYPES = new Set(["offer", "answer", "pranswer", "rollback"]);
const CANDIDATE_KEYS = new Set([
  "candidate",
  "sdpMid",
  "sdpMLineIndex",
  "usernameFragment",
]);

/**
 * Parses one text frame from a client.
 *
 * @param text The frame.
 * @returns The message, or the error to answer with.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseClientMessage } from "./messages.ts";
 *
 * assert.deepEqual(parseClientMessage('{"type":"join","session":"s1"}'), {
 *   type: "join",
 *   session: "s1",
 * });
 * assert.equal((parseClientMessage('{"type":"chat"}') as { error: string }).error, "bad_message");
 * ```
 */
export function parseClientMessage(text: string): ClientMessage | MessageError {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { error: "bad_json", message: "Cannot parse the frame as JSON" };
  }
  if (!isObject(json)) return bad("a frame must be a JSON object");
  switch (json.type) {
    case "join":
      if (!hasOnly(json, ["type", "session", "proof", "resume"])) {
        return bad("join takes only 'session', 'proof' and 'resume'");
      }
      if (typeof json.session !== "string" || !SESSION.test(json.session)) {
        return {
          error: "bad_session",
          message:
            "Cannot join: a session is 1 to 128 characters of [A-Za-z0-9_-]",
        };
      }
      return parseJoin(json, json.session);
    case "signal":
      if (
        !hasOnly(json, ["type", "to", "data"]) || typeof json.to !== "string"
      ) {
        return bad("signal takes exactly 'to' (a peer id) and 'data'");
      }
      if (!isSignalData(json.data)) {
        return bad(
          "signal data must be exactly {sdp}, {candidate} or {sealed}",
        );
      }
      return { type: "signal", to: json.to, data: json.data };
    case "ice":
      if (!hasOnly(json, ["type"])) return bad("ice takes no members");
      return { type: "ice" };
    case "leave":
      if (!hasOnly(json, ["type"])) return bad("leave takes no members");
      return { type: "leave" };
    default:
      return bad("type must be 'join', 'signal', 'ice' or 'leave'");
  }
}

/**
 * Signal data from another broker (through the bus), checked as a client's
 * would be: at most `maxBytes` of UTF-8 JSON text, exactly `{sdp}` or
 * `{candidate}`, or `{sealed}` in a keyed session.
 *
 * @param text The data as JSON text.
 * @param maxBytes The largest frame a client may send.
 * @param session The session it travels in.
 * @returns The data, or null when it is not signal data.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseSignalData } from "./messages.ts";
 *
 * assert.deepEqual(parseSignalData('{"candidate":null}', 100, "s"), { candidate: null });
 * assert.equal(parseSignalData('{"iceServers":[]}', 100, "s"), null);
 * assert.equal(parseSignalData('{"candidate":null}', 10, "s"), null);
 * assert.equal(parseSignalData('{"sealed":"AA"}', 100, "s"), null);
 * ```
 */
export function parseSignalData(
  text: string,
  maxBytes: number,
  session: string,
): SignalData | null {
  if (exceedsBytes(text, maxBytes)) return null;
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return null;
  }
  return isSignalData(data) && fitsSession(data, session) ? data : null;
}

/**
 * Whether a frame is larger than `max` bytes of UTF-8, without encoding it
 * in the common case (a UTF-16 code unit takes 1 to 3 bytes).
 *
 * @param data A text or binary frame.
 * @param max The limit in bytes.
 * @returns True when the frame is over the limit.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { exceedsBytes } from "./messages.ts";
 *
 * assert.equal(exceedsBytes("é", 1), true);
 * assert.equal(exceedsBytes("e", 1), false);
 * ```
 */
export function exceedsBytes(data: string | Uint8Array, max: number): boolean {
  if (typeof data !== "string") return data.byteLength > max;
  if (data.length > max) return true;
  if (data.length * 3 <= max) return false;
  let bytes = 0;
  for (let i = 0; i < data.length; i++) {
    const code = data.charCodeAt(i);
    bytes += code < 0x80
      ? 1
      : code < 0x800
      ? 2
      : code >= 0xd800 && code < 0xdc00
      ? 4
      : 3;
    if (code >= 0xd800 && code < 0xdc00) i++;
  }
  return bytes > max;
}

/**
 * The frames the hub sends, each built here only: `from` and every peer id
 * in them are the hub's, never a client's or another broker's words.
 */
export const frames = {
  /**
   * The answer to a join: the joiner's id, the members before it, and the
   * token that resumes its place should its socket go away.
   */
  joined(
    session: string,
    peerId: string,
    peers: string[],
    iceServers: unknown[],
    resume: string,
  ): string {
    return JSON.stringify({
      type: "joined",
      session,
      peerId,
      peers,
      iceServers,
      resume,
    });
  },
  /** A member came or went. */
  peer(type: "peer-joined" | "peer-left", peerId: string): string {
    return JSON.stringify({ type, peerId });
  },
  /** Signal data from member `from`. */
  signal(from: string, data: SignalData): string {
    return JSON.stringify({ type: "signal", from, data });
  },
  /** The answer to `ice`. */
  ice(iceServers: unknown[]): string {
    return JSON.stringify({ type: "ice", iceServers });
  },
  /** A refused frame. */
  error(code: SignalErrorCode, message: string): string {
    return JSON.stringify({ type: "error", code, message });
  },
  /**
   * Signals from these members were dropped while this peer was away (past
   * what is held for it): restart ICE with them.
   */
  restartIce(peers: string[]): string {
    return JSON.stringify({ type: "restart-ice", peers });
  },
  /**
   * The broker is draining: this socket closes next (1012), and the client
   * should connect again, to this broker's replacement or to another one.
   */
  reconnect(): string {
    return JSON.stringify({ type: "reconnect" });
  },
};

// A join's optional members, once its session is valid.
function parseJoin(
  json: Record<string, unknown>,
  session: string,
): JoinMessage | MessageError {
  const join: JoinMessage = { type: "join", session };
  if (json.resume !== undefined) {
    if (typeof json.resume !== "string" || !RESUME_TOKEN.test(json.resume)) {
      return bad("resume is the token of a 'joined' frame");
    }
    join.resume = json.resume;
  }
  if (json.proof === undefined) return join;
  if (!isKeyed(session)) {
    return bad("only a private (k_) session takes a proof");
  }
  if (!isProof(json.proof)) {
    return bad("proof is exactly {t: Unix seconds, sig: base64url}");
  }
  join.proof = json.proof;
  return join;
}

function isSignalData(data: unknown): data is SignalData {
  if (!isObject(data)) return false;
  if (hasOnly(data, ["sealed"]) && "sealed" in data) {
    const sealed = data.sealed;
    return typeof sealed === "string" && sealed.length <= MAX_SEALED &&
      SEALED.test(sealed);
  }
  if (hasOnly(data, ["sdp"]) && "sdp" in data) {
    const sdp = data.sdp;
    return isObject(sdp) && hasOnly(sdp, ["type", "sdp"]) &&
      SDP_TYPES.has(sdp.type as string) &&
      typeof sdp.sdp === "string";
  }
  if (hasOnly(data, ["candidate"]) && "candidate" in data) {
    const candidate = data.candidate;
    if (candidate === null) return true;
    if (!isObject(candidate) || typeof candidate.candidate !== "string") {
      return false;
    }
    for (const [key, value] of Object.entries(candidate)) {
      if (!CANDIDATE_KEYS.has(key)) return false;
      if (key === "sdpMLineIndex") {
        if (
          value !== null && !(Number.isInteger(value) && (value as number) >= 0)
        ) return false;
      } else if (
        key !== "candidate" && value !== null && typeof value !== "string"
      ) {
        return false;
      }
    }
    return true;
  }
  return false;
}

function isProof(proof: unknown): proof is JoinProof {
  return isObject(proof) && hasOnly(proof, ["t", "sig"]) &&
    Number.isSafeInteger(proof.t) && typeof proof.sig === "string" &&
    proof.sig.length <= 128;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function hasOnly(object: Record<string, unknown>, keys: string[]): boolean {
  for (const key in object) if (!keys.includes(key)) return false;
  return true;
}

function bad(message: string): MessageError {
  return {
    error: "bad_message",
    message: `Cannot accept the frame: ${message}`,
  };
}
