/**
 * The client frames of signaling protocol version 1, and nothing else: a
 * `signal` carries exactly an SDP description or an ICE candidate, so the
 * broker is useless as a chat relay.
 *
 * @module
 */

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

/** A frame a client may send. */
export type ClientMessage =
  | { type: "join"; session: string }
  | { type: "signal"; to: string; data: SignalData }
  | { type: "ice" }
  | { type: "leave" };

/** The data of a `signal` frame: an SDP description or an ICE candidate. */
export type SignalData = SdpData | CandidateData;

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
      if (!hasOnly(json, ["type", "session"])) {
        return bad("join takes only 'session'");
      }
      if (typeof json.session !== "string" || !SESSION.test(json.session)) {
        return {
          error: "bad_session",
          message:
            "Cannot join: a session is 1 to 128 characters of [A-Za-z0-9_-]",
        };
      }
      return { type: "join", session: json.session };
    case "signal":
      if (
        !hasOnly(json, ["type", "to", "data"]) || typeof json.to !== "string"
      ) {
        return bad("signal takes exactly 'to' (a peer id) and 'data'");
      }
      if (!isSignalData(json.data)) {
        return bad("signal data must be exactly {sdp} or {candidate}");
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
 * would be: at most `maxBytes` of UTF-8 JSON text, and exactly `{sdp}` or
 * `{candidate}`.
 *
 * @param text The data as JSON text.
 * @param maxBytes The largest frame a client may send.
 * @returns The data, or null when it is not signal data.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseSignalData } from "./messages.ts";
 *
 * assert.deepEqual(parseSignalData('{"candidate":null}', 100), { candidate: null });
 * assert.equal(parseSignalData('{"iceServers":[]}', 100), null);
 * assert.equal(parseSignalData('{"candidate":null}', 10), null);
 * ```
 */
export function parseSignalData(
  text: string,
  maxBytes: number,
): SignalData | null {
  if (exceedsBytes(text, maxBytes)) return null;
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return null;
  }
  return isSignalData(data) ? data : null;
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
  /** The answer to a join: the joiner's id and the members before it. */
  joined(
    session: string,
    peerId: string,
    peers: string[],
    iceServers: unknown[],
  ): string {
    return JSON.stringify({
      type: "joined",
      session,
      peerId,
      peers,
      iceServers,
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
};

function isSignalData(data: unknown): data is SignalData {
  if (!isObject(data)) return false;
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
