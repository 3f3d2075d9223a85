/**
 * The client side of the PeerJS server protocol, checked: the query a
 * socket opens with (`key`, `id`, `token`) and the frames PeerJS 1.5's
 * client sends (`HEARTBEAT`, and `OFFER`, `ANSWER`, `CANDIDATE` and `LEAVE`
 * to a `dst`), each payload with exactly PeerJS's keys. `metadata` is at
 * most 1 KiB of JSON and `serialization` one that PeerJS's client can read:
 * an unknown one would make the receiving client throw.
 *
 * @module
 */

import {
  MAX_PEERJS_ID_CHARS,
  MAX_PEERJS_METADATA_BYTES,
  MAX_PEERJS_TOKEN_CHARS,
} from "./limits.ts";
import { hasOnly, isCandidateInit, isObject } from "./json_checks.ts";
import { exceedsBytes } from "../messages.ts";

/** The API key PeerJS's client uses unless told otherwise. */
export const PEERJS_KEY = "peerjs";

/** The serializations PeerJS 1.5's clients know (`Peer` and `MsgPackPeer`). */
export const PEERJS_SERIALIZATIONS: readonly string[] = [
  "raw",
  "json",
  "binary",
  "binary-utf8",
  "default",
  "MsgPack",
];

/** A checked frame of a PeerJS client. */
export type PeerJsFrame =
  | { type: "HEARTBEAT" }
  | { type: "LEAVE"; dst: string }
  | {
    type: "OFFER" | "ANSWER" | "CANDIDATE";
    dst: string;
    payload: Record<string, unknown>;
  };

/** A refused frame: its code and what was wrong. */
export interface PeerJsRefusal {
  /** A refusal. */
  type: "refused";
  /** Why. */
  code:
    | "bad_json"
    | "bad_message"
    | "metadata_too_large"
    | "bad_serialization";
  /** What was wrong, for a human. */
  message: string;
}

const ID = /^[A-Za-z0-9]+(?:[ _-][A-Za-z0-9]+)*$/;
const CONNECTION_ID = /^[A-Za-z0-9_-]{1,64}$/;
const CONNECTION_TYPES = new Set(["data", "media"]);
/** The longest data channel label, and `browser` string, relayed. */
const MAX_LABEL_CHARS = 256;

const PAYLOAD_KEYS = {
  OFFER: [
    "sdp",
    "type",
    "connectionId",
    "metadata",
    "label",
    "reliable",
    "serialization",
    "browser",
  ],
  ANSWER: ["sdp", "type", "connectionId", "browser"],
  CANDIDATE: ["candidate", "type", "connectionId"],
} as const;

/**
 * Whether `id` may be a PeerJS id: PeerJS's own rule (letters and digits,
 * single spaces, dashes or underscores between them), at most 64
 * characters.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isPeerJsId } from "./peerjs_frames.ts";
 *
 * assert.equal(isPeerJsId("alice-1"), true);
 * assert.equal(isPeerJsId("-alice"), false);
 * ```
 */
export function isPeerJsId(id: unknown): id is string {
  return typeof id === "string" && id.length <= MAX_PEERJS_ID_CHARS &&
    ID.test(id);
}

/** Whether `token` may be a PeerJS token: 1 to 64 characters. */
export function isPeerJsToken(token: unknown): token is string {
  return typeof token === "string" && token.length > 0 &&
    token.length <= MAX_PEERJS_TOKEN_CHARS;
}

/**
 * Parses one text frame of a `/peerjs` client.
 *
 * @param text The frame.
 * @returns The frame, or why it is refused.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePeerJsFrame } from "./peerjs_frames.ts";
 *
 * assert.deepEqual(parsePeerJsFrame('{"type":"HEARTBEAT"}'), { type: "HEARTBEAT" });
 * const chat = '{"type":"OFFER","dst":"bob","payload":{"text":"hi"}}';
 * assert.equal((parsePeerJsFrame(chat) as { code: string }).code, "bad_message");
 * ```
 */
export function parsePeerJsFrame(text: string): PeerJsFrame | PeerJsRefusal {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return refused("bad_json", "Cannot parse the frame as JSON");
  }
  if (!isObject(json)) return bad("a frame must be a JSON object");
  const type = json.type;
  if (type === "HEARTBEAT") {
    return hasOnly(json, ["type"])
      ? { type }
      : bad("HEARTBEAT takes no members");
  }
  if (type === "LEAVE") {
    return hasOnly(json, ["type", "dst"]) && isPeerJsId(json.dst)
      ? { type, dst: json.dst }
      : bad("LEAVE takes exactly 'dst', a PeerJS id");
  }
  if (type !== "OFFER" && type !== "ANSWER" && type !== "CANDIDATE") {
    return bad(
      "type must be 'HEARTBEAT', 'OFFER', 'ANSWER', 'CANDIDATE' or 'LEAVE'",
    );
  }
  if (!hasOnly(json, ["type", "dst", "payload"]) || !isPeerJsId(json.dst)) {
    return bad(`${type} takes exactly 'dst' (a PeerJS id) and 'payload'`);
  }
  const payload = json.payload;
  if (!isObject(payload) || !hasOnly(payload, PAYLOAD_KEYS[type])) {
    return bad(
      `a ${type} payload has only ${PAYLOAD_KEYS[type].join(", ")}`,
    );
  }
  const problem = checkPayload(type, payload);
  if (problem !== null) return problem;
  return { type, dst: json.dst, payload };
}

function checkPayload(
  type: "OFFER" | "ANSWER" | "CANDIDATE",
  payload: Record<string, unknown>,
): PeerJsRefusal | null {
  if (!CONNECTION_TYPES.has(payload.type as string)) {
    return bad("a payload's type is 'data' or 'media'");
  }
  if (
    typeof payload.connectionId !== "string" ||
    !CONNECTION_ID.test(payload.connectionId)
  ) {
    return bad("a payload's connectionId is 1 to 64 of [A-Za-z0-9_-]");
  }
  if (payload.browser !== undefined && !isLabel(payload.browser)) {
    return bad("browser is a string of at most 256 characters");
  }
  if (type === "CANDIDATE") {
    return isCandidateInit(payload.candidate)
      ? null
      : bad("a CANDIDATE payload's candidate is an RTCIceCandidateInit");
  }
  const sdp = payload.sdp;
  if (
    !isObject(sdp) || !hasOnly(sdp, ["type", "sdp"]) ||
    sdp.type !== type.toLowerCase() || typeof sdp.sdp !== "string"
  ) {
    return bad(`an ${type}'s sdp is {type: '${type.toLowerCase()}', sdp}`);
  }
  return type === "OFFER" ? checkOffer(payload) : null;
}

function checkOffer(payload: Record<string, unknown>): PeerJsRefusal | null {
  if (
    payload.metadata !== undefined &&
    exceedsBytes(JSON.stringify(payload.metadata), MAX_PEERJS_METADATA_BYTES)
  ) {
    return refused(
      "metadata_too_large",
      `Cannot relay the offer: its metadata is over ${MAX_PEERJS_METADATA_BYTES} bytes of JSON`,
    );
  }
  if (payload.type === "media") {
    return hasOnly(payload, [
        "sdp",
        "type",
        "connectionId",
        "metadata",
        "browser",
      ])
      ? null
      : bad("a media OFFER has no label, reliable or serialization");
  }
  if (!PEERJS_SERIALIZATIONS.includes(payload.serialization as string)) {
    return refused(
      "bad_serialization",
      `Cannot relay the offer: serialization must be one of ${
        PEERJS_SERIALIZATIONS.join(", ")
      }`,
    );
  }
  if (payload.label !== undefined && !isLabel(payload.label)) {
    return bad("label is a string of at most 256 characters");
  }
  if (payload.reliable !== undefined && typeof payload.reliable !== "boolean") {
    return bad("reliable is a boolean");
  }
  return null;
}

function isLabel(value: unknown): boolean {
  return typeof value === "string" && value.length <= MAX_LABEL_CHARS;
}

function refused(
  code: PeerJsRefusal["code"],
  message: string,
): PeerJsRefusal {
  return { type: "refused", code, message };
}

function bad(message: string): PeerJsRefusal {
  return refused("bad_message", `Cannot accept the frame: ${message}`);
}
