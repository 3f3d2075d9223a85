/**
 * The signaling dialects for apps written for other libraries (y-webrtc,
 * PeerJS and Nostr relays, as Trystero uses them): their names, the bounds that each dialect adds to the
 * limits of protocol version 1, and the namespace a socket lives in. Every
 * number here is named once.
 *
 * @module
 */

/** The dialects, in the order `--compat` lists them. */
export const COMPAT_DIALECTS: readonly CompatDialect[] = [
  "y-webrtc",
  "peerjs",
  "nostr",
];

/** One dialect: `y-webrtc` (`/y-webrtc`), `peerjs` (`/peerjs`) or `nostr` (`/nostr`). */
export type CompatDialect = "y-webrtc" | "peerjs" | "nostr";

/** Topics one `/y-webrtc` socket may be subscribed to at once. */
export const MAX_TOPICS_PER_SOCKET = 16;

/** The longest y-webrtc topic (a room name), in UTF-16 code units. */
export const MAX_TOPIC_CHARS = 256;

/**
 * The longest y-webrtc peer id (`from`, `to`) in clear mode; y-webrtc's
 * own are UUIDs of 36 characters.
 */
export const MAX_YWEBRTC_PEER_CHARS = 64;

/**
 * The largest `data` of a publish in y-webrtc's password mode: one base64
 * string of at most 16 KiB (its characters are bytes).
 */
export const MAX_PASSWORD_DATA_BYTES = 16_384;

/** The longest PeerJS id; PeerJS's own are UUIDs of 36 characters. */
export const MAX_PEERJS_ID_CHARS = 64;

/** The longest PeerJS token; PeerJS's own are about 11 characters. */
export const MAX_PEERJS_TOKEN_CHARS = 64;

/** The largest PeerJS `metadata`, as JSON text in UTF-8 bytes. */
export const MAX_PEERJS_METADATA_BYTES = 1_024;

/**
 * How long a PeerJS message to an id that is not connected waits for it;
 * then the sender gets `EXPIRE`. Also how long a PeerJS id whose socket
 * closed stays its token's, so that a reconnect keeps it; then its
 * contacts get `LEAVE`.
 */
export const PEERJS_WAIT_MS = 5_000;

/** How often messages waiting for an id look for it on other brokers. */
export const PEERJS_RETRY_MS = 250;

/** Messages one PeerJS socket may have waiting for absent ids. */
export const MAX_PEERJS_QUEUED_MESSAGES = 32;

/** Bytes one PeerJS socket may have waiting for absent ids. */
export const MAX_PEERJS_QUEUED_BYTES: number = 64 * 1_024;

/**
 * The PeerJS ids one id remembers as contacts (told `LEAVE` when it dies);
 * past it, new contacts are not remembered.
 */
export const MAX_PEERJS_CONTACTS = 256;

/** Subscriptions one `/nostr` socket may hold at once. */
export const MAX_NOSTR_SUBSCRIPTIONS = 16;

/** Filters one Nostr `REQ` may carry. */
export const MAX_NOSTR_FILTERS = 16;

/**
 * Values one field of a Nostr filter (`ids`, `authors`, `kinds`, a
 * `#<letter>` tag) may list.
 */
export const MAX_NOSTR_FILTER_VALUES = 256;

/** The longest Nostr subscription id, as NIP-01 bounds it. */
export const MAX_NOSTR_SUBSCRIPTION_CHARS = 64;

/** The largest Nostr `EVENT` frame, in UTF-8 bytes. */
export const MAX_NOSTR_EVENT_BYTES = 16_384;

/** The longest value of a Nostr tag, or of a `#<letter>` filter value. */
export const MAX_NOSTR_TAG_CHARS = 1_024;

/** Tags one Nostr event may carry. */
export const MAX_NOSTR_TAGS = 64;

/** The Nostr kinds this relay accepts: the ephemeral ones (NIP-01). */
export const NOSTR_EPHEMERAL_KINDS = { min: 20_000, max: 29_999 } as const;

/**
 * How long a Nostr event id is remembered after it was relayed: the same
 * event again within it is answered `duplicate:` and not relayed again.
 */
export const NOSTR_DUPLICATE_WINDOW_MS = 10_000;

/** Nostr event ids remembered at most (the oldest go first). */
export const MAX_NOSTR_RECENT_IDS = 8_192;

/**
 * The namespace of a socket's topics and ids: the page's origin, the
 * request's `Origin` value, wherever the socket arrived. A pod on its own
 * host has its own origin, so its rooms and ids are its own; a page of
 * another site that opens a socket to the pod's host lands in that site's
 * namespace, never in the pod's (the `Host` names no namespace: any page
 * can send a socket to any host, but a browser sets `Origin` itself). Every
 * pod on the broker host has the same opaque origin, `null`, so they share
 * one namespace.
 *
 * @param origin The `Origin` header, or null when absent.
 * @returns A namespace name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { namespaceOf } from "./limits.ts";
 *
 * assert.equal(namespaceOf("https://a.pods.example"), "origin:https://a.pods.example");
 * assert.equal(namespaceOf("null"), "origin:null");
 * assert.notEqual(namespaceOf(null), namespaceOf(""));
 * ```
 */
export function namespaceOf(origin: string | null): string {
  return origin === null ? "none" : `origin:${origin}`;
}

/**
 * A key for a name in a namespace, unambiguous whatever characters either
 * holds (the namespace's length comes first).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { scopedKey } from "./limits.ts";
 *
 * assert.notEqual(scopedKey("a", "bc"), scopedKey("ab", "c"));
 * ```
 */
export function scopedKey(namespace: string, name: string): string {
  return `${namespace.length}:${namespace}${name}`;
}
