/**
 * The dialect hubs' view of the signaling bus: {@linkcode TopicRelay}s for
 * `/y-webrtc` and `/nostr` and an {@linkcode IdRelay} for `/peerjs`, all on
 * one {@linkcode CompatBus}: the bus's when the broker has one, else a
 * one-node in-process engine ({@linkcode soloRelays}), so that the hubs
 * take one path either way. What travels is what a client would send (checked
 * again by the receiving hub), and the sender's PeerJS id; the bus never
 * hands a socket anything the receiving hub did not check.
 *
 * @module
 */

import { encodeHex } from "../../_util/encoding.ts";
import { sha256 } from "../../_util/hash.ts";
import type { Logger } from "../../_util/log.ts";
import type { CompatBus } from "../bus/compat.ts";
import { LocalCompatEngine } from "../bus/local_compat.ts";
import { scopedKey } from "./limits.ts";
import type {
  IdRelay,
  IdRelayListener,
  RemoteMessage,
  TopicRelay,
} from "./relay_types.ts";

/** The relays of one broker's dialect hubs. */
export interface CompatRelays {
  /** For `/y-webrtc`: topics, and the `from`s of clear mode. */
  topics: TopicRelay;
  /** For `/nostr`: a namespace's events (one topic a namespace). */
  events: TopicRelay;
  /** For `/peerjs`. */
  ids: IdRelay;
}

/**
 * The relays of a broker with no bus: its topics and ids are its own (a
 * one-node in-process engine, so the hubs take the same path either way).
 *
 * @returns The relays.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { soloRelays } from "./relays.ts";
 *
 * const { ids } = soloRelays();
 * assert.equal(await ids.claim("k"), true);
 * assert.equal(await ids.send({ dstKey: "other", src: "a", frame: { type: "LEAVE", dst: "b" } }), false);
 * ```
 */
export function soloRelays(): CompatRelays {
  return createCompatRelays(new LocalCompatEngine().connect("solo"));
}

// What starts a bus key: `/nostr` namespace topics, y-webrtc `from`s and
// PeerJS ids. A y-webrtc topic key (scopedKey) starts with a digit.
const EVENTS = "n";
const FROM = "f";
const ID = "i";

/**
 * Makes the relays on `bus` and attaches them to it.
 *
 * @param bus The bus's compat part (`Bus.compat`).
 * @param logger Told of failed bus calls (at debug level).
 * @returns The relays.
 */
export function createCompatRelays(
  bus: CompatBus,
  logger?: Logger,
): CompatRelays {
  const failed = (what: string) => (error: unknown) => {
    logger?.("debug", `Cannot ${what} through the signaling bus`, {
      error: String((error as Error)?.message ?? error),
    });
  };
  const topics = topicRelay(bus, "", failed);
  const events = topicRelay(bus, EVENTS, failed);
  let idListener: IdRelayListener | undefined;
  bus.attach({
    topic(key, message) {
      const relay = key.startsWith(EVENTS) ? events : topics;
      relay.deliver(key.slice(relay.prefix.length), message);
    },
    direct(key, message) {
      if (!key.startsWith(ID) || idListener === undefined) return;
      const parsed = parseDirect(message);
      const dstKey = key.slice(ID.length);
      if (typeof parsed.handOver === "string") {
        idListener.handOver(dstKey, parsed.handOver);
      } else {
        idListener.message(remoteMessage(dstKey, parsed));
      }
    },
  });
  const ids: IdRelay = {
    claim: (key) => bus.claim(ID + key),
    release(key) {
      bus.release(ID + key).catch(failed("release"));
    },
    send: (message) =>
      bus.send(
        ID + message.dstKey,
        JSON.stringify({ src: message.src, frame: message.frame }),
      ),
    async handOver(key, proof) {
      const mine = () => bus.claim(ID + key);
      if (!await bus.send(ID + key, JSON.stringify({ handOver: proof }))) {
        return await mine();
      }
      // The holder lets it go as the request arrives: a few short tries.
      for (let tries = 0; tries < HAND_OVER_TRIES; tries++) {
        await new Promise((resolve) => setTimeout(resolve, HAND_OVER_STEP_MS));
        if (await mine()) return true;
      }
      return false;
    },
    attach(listener) {
      idListener = listener;
    },
  };
  return { topics: topics.relay, events: events.relay, ids };
}

/**
 * A PeerJS token's proof: its SHA-256, hex (what travels instead of it).
 *
 * @param token The token.
 * @returns The proof.
 */
export function proofOf(token: string): string {
  return encodeHex(sha256(new TextEncoder().encode(token)));
}

// How long a hand-over may take: the holder lets the id go when the
// request arrives, and the claim is tried again meanwhile.
const HAND_OVER_TRIES = 10;
const HAND_OVER_STEP_MS = 50;

/** A direct message as another broker sent it (hostile: unread fields). */
interface Direct {
  src?: unknown;
  frame?: unknown;
  handOver?: unknown;
}

function parseDirect(message: string): Direct {
  try {
    const parsed = JSON.parse(message);
    return typeof parsed === "object" && parsed !== null ? parsed : {};
  } catch {
    return {};
  }
}

// A message for an id (the hub checks the frame; an unreadable one has no
// `src` and is dropped there).
function remoteMessage(dstKey: string, parsed: Direct): RemoteMessage {
  return {
    dstKey,
    src: typeof parsed.src === "string" ? parsed.src : "",
    frame: parsed.frame as RemoteMessage["frame"],
  };
}

/** A topic relay whose bus keys start with `prefix`. */
function topicRelay(
  bus: CompatBus,
  prefix: string,
  failed: (what: string) => (error: unknown) => void,
): {
  relay: TopicRelay;
  prefix: string;
  deliver: (key: string, frame: string) => void;
} {
  // Per topic with subscribers here: how many, and how many elsewhere
  // (as the last subscribe or publish found).
  const local = new Map<string, number>();
  const remote = new Map<string, number>();
  let deliver: ((key: string, frame: string) => void) | undefined;
  const forget = (key: string) => {
    const count = (local.get(key) ?? 1) - 1;
    if (count > 0) {
      local.set(key, count);
      return;
    }
    local.delete(key);
    remote.delete(key);
  };
  const relay: TopicRelay = {
    async subscribe(key, max) {
      local.set(key, (local.get(key) ?? 0) + 1);
      try {
        const answer = await bus.subscribe(prefix + key, max);
        if (local.has(key)) remote.set(key, answer.remote);
        if (!answer.ok) forget(key);
        return answer.ok;
      } catch (error) {
        failed("subscribe")(error);
        return true;
      }
    },
    unsubscribe(key) {
      forget(key);
      bus.unsubscribe(prefix + key).catch(failed("unsubscribe"));
    },
    remote: (key) => remote.get(key) ?? 0,
    publish(key, frame) {
      bus.publish(prefix + key, frame).then((others) => {
        if (local.has(key)) remote.set(key, others);
      }, failed("publish"));
    },
    claimFrom: (key, from) => bus.claim(FROM + scopedKey(key, from)),
    releaseFrom(key, from) {
      bus.release(FROM + scopedKey(key, from)).catch(failed("release"));
    },
    attach(to) {
      deliver = to;
    },
  };
  return { relay, prefix, deliver: (key, frame) => deliver?.(key, frame) };
}
