/**
 * The dialect hubs' view of the signaling bus: a {@linkcode TopicRelay} for
 * `/y-webrtc` and an {@linkcode IdRelay} for `/peerjs`, both on one
 * {@linkcode CompatBus}. What travels is what a client would send (checked
 * again by the receiving hub), and the sender's PeerJS id; the bus never
 * hands a socket anything the receiving hub did not check.
 *
 * @module
 */

import type { Logger } from "../../_util/log.ts";
import type { CompatBus } from "../bus/compat.ts";
import { scopedKey } from "./limits.ts";
import type { IdRelay, RemoteMessage, TopicRelay } from "./relay_types.ts";

/** The relays of one broker's dialect hubs. */
export interface CompatRelays {
  /** For `/y-webrtc`. */
  topics: TopicRelay;
  /** For `/peerjs`. */
  ids: IdRelay;
}

/**
 * Makes both relays on `bus` and attaches them to it.
 *
 * @param bus The bus's compat part (`RedisBus.compat`).
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
  // Per topic with subscribers here: how many, and how many elsewhere
  // (as the last subscribe or publish found).
  const local = new Map<string, number>();
  const remote = new Map<string, number>();
  let deliverTopic: ((key: string, frame: string) => void) | undefined;
  let deliverId: ((message: RemoteMessage) => void) | undefined;
  bus.attach({
    topic: (key, message) => deliverTopic?.(key, message),
    direct(key, message) {
      if (key[0] !== "i" || deliverId === undefined) return;
      let parsed: { src?: unknown; frame?: unknown };
      try {
        parsed = JSON.parse(message);
      } catch {
        return;
      }
      if (typeof parsed.src !== "string") return;
      deliverId({
        dstKey: key.slice(1),
        src: parsed.src,
        frame: parsed.frame as RemoteMessage["frame"],
      });
    },
  });

  const topics: TopicRelay = {
    async subscribe(key, max) {
      local.set(key, (local.get(key) ?? 0) + 1);
      try {
        const answer = await bus.subscribe(key, max);
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
      bus.unsubscribe(key).catch(failed("unsubscribe"));
    },
    remote: (key) => remote.get(key) ?? 0,
    publish(key, frame) {
      bus.publish(key, frame).then((others) => {
        if (local.has(key)) remote.set(key, others);
      }, failed("publish"));
    },
    claimFrom: (key, from) => bus.claim(`f${scopedKey(key, from)}`),
    releaseFrom(key, from) {
      bus.release(`f${scopedKey(key, from)}`).catch(failed("release"));
    },
    attach(deliver) {
      deliverTopic = deliver;
    },
  };

  function forget(key: string): void {
    const count = (local.get(key) ?? 1) - 1;
    if (count > 0) {
      local.set(key, count);
      return;
    }
    local.delete(key);
    remote.delete(key);
  }

  const ids: IdRelay = {
    claim: (key) => bus.claim(`i${key}`),
    release(key) {
      bus.release(`i${key}`).catch(failed("release"));
    },
    send: (message) =>
      bus.send(
        `i${message.dstKey}`,
        JSON.stringify({ src: message.src, frame: message.frame }),
      ),
    attach(deliver) {
      deliverId = deliver;
    },
  };
  return { topics, ids };
}
