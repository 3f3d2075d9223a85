/**
 * The client frames of the y-webrtc signaling protocol, checked: what
 * y-webrtc 10's client sends (`subscribe`, `unsubscribe`, `publish`,
 * `ping`) and, inside a publish, exactly its `announce` and `signal` data
 * with a simple-peer signal, or in password mode one base64 string. Nothing
 * else passes, so the endpoint is no general message relay.
 *
 * @module
 */

import {
  MAX_PASSWORD_DATA_BYTES,
  MAX_TOPIC_CHARS,
  MAX_TOPICS_PER_SOCKET,
  MAX_YWEBRTC_PEER_CHARS,
} from "./limits.ts";
import { hasOnly, isCandidateInit, isObject } from "./json_checks.ts";

/** The data of a clear-mode publish: an announce or a signal. */
export type ClearData =
  | { type: "announce"; from: string }
  | {
    type: "signal";
    from: string;
    to: string;
    token?: number;
    signal: Record<string, unknown>;
  };

/** A checked client frame. */
export type YWebrtcFrame =
  | { type: "subscribe" | "unsubscribe"; topics: string[] }
  | { type: "publish"; topic: string; data: ClearData | string }
  | { type: "ping" };

/** Why a frame was refused. */
export type YWebrtcRefusal = {
  /** A refusal. */
  type: "error";
  /** `bad_json`, `bad_message`, `data_too_large` or `too_many_topics`. */
  code: "bad_json" | "bad_message" | "data_too_large" | "too_many_topics";
  /** What was wrong. */
  message: string;
};

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const SDP_TYPES = new Set(["offer", "answer", "pranswer", "rollback"]);
const KINDS = new Set(["audio", "video"]);
const DIRECTIONS = new Set([
  "sendrecv",
  "sendonly",
  "recvonly",
  "inactive",
]);
/** The most entries of a transceiver request's `streams` or `sendEncodings`. */
const MAX_INIT_ENTRIES = 16;

/**
 * Parses one text frame of a `/y-webrtc` client.
 *
 * @param text The frame.
 * @returns The frame, or why it is refused.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseYWebrtcFrame } from "./y_webrtc_frames.ts";
 *
 * assert.deepEqual(parseYWebrtcFrame('{"type":"ping"}'), { type: "ping" });
 * const chat = '{"type":"publish","topic":"t","data":{"type":"chat","from":"a"}}';
 * assert.equal((parseYWebrtcFrame(chat) as { code: string }).code, "bad_message");
 * ```
 */
export function parseYWebrtcFrame(text: string): YWebrtcFrame | YWebrtcRefusal {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return {
      type: "error",
      code: "bad_json",
      message: "Cannot parse the frame as JSON",
    };
  }
  if (!isObject(json)) return bad("a frame must be a JSON object");
  switch (json.type) {
    case "subscribe":
    case "unsubscribe":
      return topicsFrame(json, json.type);
    case "publish":
      return publishFrame(json);
    case "ping":
      return hasOnly(json, ["type"])
        ? { type: "ping" }
        : bad("ping takes no members");
    default:
      return bad(
        "type must be 'subscribe', 'unsubscribe', 'publish' or 'ping'",
      );
  }
}

/** Whether `topic` may name a topic: 1 to 256 characters. */
export function isTopic(topic: unknown): topic is string {
  return typeof topic === "string" && topic.length > 0 &&
    topic.length <= MAX_TOPIC_CHARS;
}

function topicsFrame(
  json: Record<string, unknown>,
  type: "subscribe" | "unsubscribe",
): YWebrtcFrame | YWebrtcRefusal {
  const topics = json.topics;
  if (!hasOnly(json, ["type", "topics"]) || !Array.isArray(topics)) {
    return bad(`${type} takes exactly 'topics', an array`);
  }
  if (topics.length > MAX_TOPICS_PER_SOCKET) {
    return {
      type: "error",
      code: "too_many_topics",
      message:
        `Cannot ${type}: at most ${MAX_TOPICS_PER_SOCKET} topics a socket`,
    };
  }
  if (!topics.every(isTopic)) {
    return bad(`a topic is a string of 1 to ${MAX_TOPIC_CHARS} characters`);
  }
  return { type, topics: [...new Set(topics)] };
}

function publishFrame(
  json: Record<string, unknown>,
): YWebrtcFrame | YWebrtcRefusal {
  if (!hasOnly(json, ["type", "topic", "data"]) || !isTopic(json.topic)) {
    return bad("publish takes exactly 'topic' and 'data'");
  }
  const data = json.data;
  if (typeof data === "string") {
    if (data.length > MAX_PASSWORD_DATA_BYTES) {
      return {
        type: "error",
        code: "data_too_large",
        message:
          `Cannot publish: password-mode data is at most ${MAX_PASSWORD_DATA_BYTES} bytes`,
      };
    }
    if (data.length % 4 !== 0 || !BASE64.test(data)) {
      return bad("password-mode data must be one base64 string");
    }
    return { type: "publish", topic: json.topic, data };
  }
  const clear = clearData(data);
  if (clear === null) {
    return bad(
      "data must be y-webrtc's announce or signal (with a simple-peer signal), or a base64 string",
    );
  }
  return { type: "publish", topic: json.topic, data: clear };
}

function isPeer(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 &&
    value.length <= MAX_YWEBRTC_PEER_CHARS;
}

function clearData(data: unknown): ClearData | null {
  if (!isObject(data) || !isPeer(data.from)) return null;
  if (data.type === "announce") {
    return hasOnly(data, ["type", "from"])
      ? { type: "announce", from: data.from }
      : null;
  }
  if (data.type !== "signal") return null;
  if (!hasOnly(data, ["type", "from", "to", "token", "signal"])) return null;
  if (!isPeer(data.to) || !isSignal(data.signal)) return null;
  if (data.token !== undefined && !Number.isFinite(data.token)) return null;
  const out: ClearData = {
    type: "signal",
    from: data.from,
    to: data.to,
    signal: data.signal,
  };
  if (data.token !== undefined) out.token = data.token as number;
  return out;
}

/** A simple-peer signal: an SDP, a candidate, or a renegotiation request. */
function isSignal(signal: unknown): signal is Record<string, unknown> {
  if (!isObject(signal)) return false;
  switch (signal.type) {
    case "candidate":
      return hasOnly(signal, ["type", "candidate"]) &&
        isCandidateInit(signal.candidate);
    case "renegotiate":
      return hasOnly(signal, ["type", "renegotiate"]) &&
        signal.renegotiate === true;
    case "transceiverRequest":
      return hasOnly(signal, ["type", "transceiverRequest"]) &&
        isTransceiverRequest(signal.transceiverRequest);
    default:
      return SDP_TYPES.has(signal.type as string) &&
        hasOnly(signal, ["type", "sdp"]) && typeof signal.sdp === "string";
  }
}

function isTransceiverRequest(value: unknown): boolean {
  if (!isObject(value) || !hasOnly(value, ["kind", "init"])) return false;
  if (!KINDS.has(value.kind as string)) return false;
  const init = value.init;
  if (init === undefined) return true;
  if (!isObject(init)) return false;
  if (!hasOnly(init, ["direction", "streams", "sendEncodings"])) return false;
  if (
    init.direction !== undefined && !DIRECTIONS.has(init.direction as string)
  ) return false;
  // A MediaStream becomes `{}` in JSON: nothing of it travels.
  if (
    init.streams !== undefined &&
    !(Array.isArray(init.streams) && init.streams.length <= MAX_INIT_ENTRIES &&
      init.streams.every((s) => isObject(s) && Object.keys(s).length === 0))
  ) return false;
  return init.sendEncodings === undefined ||
    (Array.isArray(init.sendEncodings) &&
      init.sendEncodings.length <= MAX_INIT_ENTRIES &&
      init.sendEncodings.every(isFlatObject));
}

// An encoding's parameters: named numbers, strings and booleans.
function isFlatObject(value: unknown): boolean {
  return isObject(value) &&
    Object.values(value).every((v) =>
      typeof v === "number" || typeof v === "string" || typeof v === "boolean"
    );
}

function bad(message: string): YWebrtcRefusal {
  return {
    type: "error",
    code: "bad_message",
    message: `Cannot accept the frame: ${message}`,
  };
}
