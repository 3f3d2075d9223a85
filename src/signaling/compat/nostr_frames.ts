/**
 * The client frames of a Nostr relay (NIP-01), checked: `EVENT` with an
 * ephemeral event of at most {@linkcode MAX_NOSTR_EVENT_BYTES}, `REQ` with
 * filters on `ids`, `authors`, `kinds`, `#<letter>` tags, `since` and
 * `until` (and `limit`, which a relay that stores nothing has no use for),
 * and `CLOSE`. Every field is bounded; nothing else passes. The id and the
 * signature are checked elsewhere (`nostr_verify.ts`), after the rate
 * limit, since they cost far more than this.
 *
 * @module
 */

import { exceedsBytes } from "../messages.ts";
import { isObject } from "./json_checks.ts";
import {
  MAX_NOSTR_EVENT_BYTES,
  MAX_NOSTR_FILTER_VALUES,
  MAX_NOSTR_FILTERS,
  MAX_NOSTR_SUBSCRIPTION_CHARS,
  MAX_NOSTR_TAG_CHARS,
  MAX_NOSTR_TAGS,
  NOSTR_EPHEMERAL_KINDS,
} from "./limits.ts";

/** A Nostr event, as NIP-01 has it. */
export interface NostrEvent {
  /** The sha256 of its serialization, 64 lowercase hex digits. */
  id: string;
  /** Its author's x-only public key, 64 lowercase hex digits. */
  pubkey: string;
  /** When it was made, in seconds since the epoch. */
  created_at: number;
  /** Its kind. */
  kind: number;
  /** Its tags: arrays of strings, the first one the tag's name. */
  tags: string[][];
  /** Its content. */
  content: string;
  /** The BIP-340 signature of `id`, 128 lowercase hex digits. */
  sig: string;
}

/** A checked filter of a `REQ`; an absent field matches anything. */
export interface NostrFilter {
  /** Event ids. */
  ids?: Set<string>;
  /** Authors' public keys. */
  authors?: Set<string>;
  /** Kinds. */
  kinds?: Set<number>;
  /** `#<letter>` fields: the tag name to the values of that tag. */
  tags?: Map<string, Set<string>>;
  /** The earliest `created_at` (inclusive). */
  since?: number;
  /** The latest `created_at` (inclusive). */
  until?: number;
}

/** Why a frame is refused, and how the relay answers it. */
export interface NostrRefusal {
  /** A refusal. */
  type: "refused";
  /**
   * `OK` (an event whose id could be read), `CLOSED` (a `REQ` whose
   * subscription id could be read) or `NOTICE`.
   */
  reply: "OK" | "CLOSED" | "NOTICE";
  /** The event id or subscription id the reply names ("" for a notice). */
  target: string;
  /** NIP-01's machine-readable prefix of the message. */
  prefix: "invalid" | "blocked";
  /** The code the metrics count it under. */
  code: string;
  /** What was wrong. */
  message: string;
}

/** A checked client frame. */
export type NostrFrame =
  | { type: "event"; event: NostrEvent }
  | { type: "req"; sub: string; filters: NostrFilter[] }
  | { type: "close"; sub: string };

const HEX64 = /^[0-9a-f]{64}$/;
const HEX128 = /^[0-9a-f]{128}$/;
const TAG_FIELD = /^#[A-Za-z]$/;
const EVENT_KEYS = new Set([
  "id",
  "pubkey",
  "created_at",
  "kind",
  "tags",
  "content",
  "sig",
]);

/**
 * Parses one text frame of a `/nostr` client.
 *
 * @param text The frame.
 * @returns The frame, or why it is refused.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseNostrFrame } from "./nostr_frames.ts";
 *
 * assert.deepEqual(parseNostrFrame('["CLOSE","s"]'), { type: "close", sub: "s" });
 * const kinds = parseNostrFrame('["REQ","s",{"kinds":[20001]}]');
 * assert.equal(kinds.type, "req");
 * assert.equal(parseNostrFrame('{"type":"ping"}').type, "refused");
 * ```
 */
export function parseNostrFrame(text: string): NostrFrame | NostrRefusal {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return notice("bad_json", "cannot parse the frame as JSON");
  }
  if (!Array.isArray(json) || typeof json[0] !== "string") {
    return notice(
      "bad_message",
      "a frame is an array whose first item names it",
    );
  }
  switch (json[0]) {
    case "EVENT":
      return eventFrame(json, text);
    case "REQ":
      return reqFrame(json);
    case "CLOSE":
      return json.length === 2 && isSubscriptionId(json[1])
        ? { type: "close", sub: json[1] }
        : notice("bad_message", "CLOSE takes one subscription id");
    default:
      return notice("bad_message", "a frame is EVENT, REQ or CLOSE");
  }
}

/** Whether `kind` is ephemeral: relayed, never stored (NIP-01). */
export function isEphemeralKind(kind: number): boolean {
  return kind >= NOSTR_EPHEMERAL_KINDS.min && kind <= NOSTR_EPHEMERAL_KINDS.max;
}

/**
 * Whether `event` matches `filter`: every field present matches (`since`
 * and `until` inclusive).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { matchesFilter } from "./nostr_frames.ts";
 *
 * const event = {
 *   id: "0".repeat(64), pubkey: "1".repeat(64), created_at: 100,
 *   kind: 20001, tags: [["x", "room"]], content: "", sig: "2".repeat(128),
 * };
 * assert.equal(matchesFilter({ since: 100, tags: new Map([["x", new Set(["room"])]]) }, event), true);
 * assert.equal(matchesFilter({ since: 101 }, event), false);
 * ```
 */
export function matchesFilter(filter: NostrFilter, event: NostrEvent): boolean {
  if (filter.since !== undefined && event.created_at < filter.since) {
    return false;
  }
  if (filter.until !== undefined && event.created_at > filter.until) {
    return false;
  }
  if (filter.kinds !== undefined && !filter.kinds.has(event.kind)) return false;
  if (filter.authors !== undefined && !filter.authors.has(event.pubkey)) {
    return false;
  }
  if (filter.ids !== undefined && !filter.ids.has(event.id)) return false;
  for (const [name, values] of filter.tags ?? []) {
    const tagged = event.tags.some((tag) =>
      tag[0] === name && tag[1] !== undefined && values.has(tag[1])
    );
    if (!tagged) return false;
  }
  return true;
}

function eventFrame(json: unknown[], text: string): NostrFrame | NostrRefusal {
  const event = json[1];
  const id = isObject(event) && typeof event.id === "string" &&
      HEX64.test(event.id)
    ? event.id
    : null;
  const refuse = (prefix: NostrRefusal["prefix"], code: string, why: string) =>
    id === null
      ? notice(code, why, prefix)
      : refusal("OK", id, prefix, code, why);
  if (exceedsBytes(text, MAX_NOSTR_EVENT_BYTES)) {
    return refuse(
      "invalid",
      "data_too_large",
      `an EVENT frame is at most ${MAX_NOSTR_EVENT_BYTES} bytes`,
    );
  }
  if (json.length !== 2 || !isEvent(event)) {
    return refuse("invalid", "bad_message", "the event is not a NIP-01 event");
  }
  if (!isEphemeralKind(event.kind)) {
    return refuse(
      "blocked",
      "not_ephemeral",
      `only ephemeral events (kinds ${NOSTR_EPHEMERAL_KINDS.min}-${NOSTR_EPHEMERAL_KINDS.max}) are relayed here, and none is stored`,
    );
  }
  return { type: "event", event };
}

function isEvent(value: unknown): value is NostrEvent {
  if (!isObject(value)) return false;
  for (const key in value) if (!EVENT_KEYS.has(key)) return false;
  return typeof value.id === "string" && HEX64.test(value.id) &&
    typeof value.pubkey === "string" && HEX64.test(value.pubkey) &&
    typeof value.sig === "string" && HEX128.test(value.sig) &&
    Number.isSafeInteger(value.created_at) &&
    (value.created_at as number) >= 0 &&
    Number.isSafeInteger(value.kind) && typeof value.content === "string" &&
    isTags(value.tags);
}

function isTags(tags: unknown): tags is string[][] {
  return Array.isArray(tags) && tags.length <= MAX_NOSTR_TAGS &&
    tags.every((tag) =>
      Array.isArray(tag) && tag.length > 0 &&
      tag.every((item) =>
        typeof item === "string" && item.length <= MAX_NOSTR_TAG_CHARS
      )
    );
}

function isSubscriptionId(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 &&
    value.length <= MAX_NOSTR_SUBSCRIPTION_CHARS;
}

function reqFrame(json: unknown[]): NostrFrame | NostrRefusal {
  const sub = json[1];
  if (!isSubscriptionId(sub)) {
    return notice(
      "bad_message",
      `a subscription id is a string of 1 to ${MAX_NOSTR_SUBSCRIPTION_CHARS} characters`,
    );
  }
  const raw = json.slice(2);
  if (raw.length === 0 || raw.length > MAX_NOSTR_FILTERS) {
    return refusal(
      "CLOSED",
      sub,
      "invalid",
      "bad_message",
      `a REQ carries 1 to ${MAX_NOSTR_FILTERS} filters`,
    );
  }
  const filters: NostrFilter[] = [];
  for (const item of raw) {
    const filter = parseFilter(item);
    if (typeof filter === "string") {
      return refusal("CLOSED", sub, "invalid", "bad_message", filter);
    }
    filters.push(filter);
  }
  return { type: "req", sub, filters };
}

// A filter, or what is wrong with it.
function parseFilter(value: unknown): NostrFilter | string {
  if (!isObject(value)) return "a filter is a JSON object";
  const filter: NostrFilter = {};
  for (const [key, item] of Object.entries(value)) {
    const wrong = setField(filter, key, item);
    if (wrong !== null) return wrong;
  }
  return filter;
}

// Sets one field of `filter`; returns what is wrong with it, or null.
function setField(filter: NostrFilter, key: string, item: unknown) {
  switch (key) {
    case "ids":
    case "authors": {
      const values = valuesOf(
        item,
        (v) => typeof v === "string" && HEX64.test(v),
      );
      if (values === null) {
        return `'${key}' lists up to ${MAX_NOSTR_FILTER_VALUES} 64-digit lowercase hex strings`;
      }
      filter[key] = values as Set<string>;
      return null;
    }
    case "kinds": {
      const values = valuesOf(
        item,
        (v) => Number.isSafeInteger(v) && (v as number) >= 0,
      );
      if (values === null) {
        return `'kinds' lists up to ${MAX_NOSTR_FILTER_VALUES} kinds`;
      }
      filter.kinds = values as Set<number>;
      return null;
    }
    case "since":
    case "until":
    case "limit":
      if (!Number.isSafeInteger(item) || (item as number) < 0) {
        return `'${key}' is a whole number of at least 0`;
      }
      if (key !== "limit") filter[key] = item as number;
      return null;
  }
  if (!TAG_FIELD.test(key)) {
    return `a filter has no field '${key.slice(0, 16)}'`;
  }
  const values = valuesOf(
    item,
    (v) => typeof v === "string" && v.length <= MAX_NOSTR_TAG_CHARS,
  );
  if (values === null) {
    return `'${key}' lists up to ${MAX_NOSTR_FILTER_VALUES} strings of at most ${MAX_NOSTR_TAG_CHARS} characters`;
  }
  filter.tags ??= new Map();
  filter.tags.set(key.slice(1), values as Set<string>);
  return null;
}

function valuesOf(
  item: unknown,
  isValue: (value: unknown) => boolean,
): Set<unknown> | null {
  if (!Array.isArray(item) || item.length > MAX_NOSTR_FILTER_VALUES) {
    return null;
  }
  return item.every(isValue) ? new Set(item) : null;
}

function refusal(
  reply: NostrRefusal["reply"],
  target: string,
  prefix: NostrRefusal["prefix"],
  code: string,
  message: string,
): NostrRefusal {
  return { type: "refused", reply, target, prefix, code, message };
}

function notice(
  code: string,
  message: string,
  prefix: NostrRefusal["prefix"] = "invalid",
): NostrRefusal {
  return refusal("NOTICE", "", prefix, code, message);
}
