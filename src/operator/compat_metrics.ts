/**
 * The metrics of the dialects (`/y-webrtc`, `/peerjs`, `/nostr`):
 * frames relayed and refused, by dialect (and code), and their open sockets.
 * `Metrics` holds one and renders it with the rest.
 *
 * @module
 */

import {
  COMPAT_DIALECTS,
  type CompatDialect,
} from "../signaling/compat/limits.ts";
import { Counter, header } from "./prometheus.ts";

/**
 * The codes a dialect refuses a frame or a connection with: the values of
 * the `code` label of `pod_broker_compat_frames_refused_total` (any other
 * is counted as `other`).
 */
export const COMPAT_REFUSAL_CODES: readonly string[] = [
  "bad_json",
  "bad_message",
  "rate_limited",
  "frame_too_large",
  "not_subscribed",
  "forged_from",
  "data_too_large",
  "too_many_topics",
  "topic_full",
  "metadata_too_large",
  "bad_serialization",
  "queue_full",
  "expired",
  "id_taken",
  "invalid_id",
  "invalid_key",
  "not_ephemeral",
  "bad_signature",
];

const CODES = new Set(COMPAT_REFUSAL_CODES);
const DIALECTS = new Set<string>(COMPAT_DIALECTS);

/** Open sockets of each dialect that is on. */
export type CompatSocketCounts = Partial<Record<CompatDialect, number>>;

/** The dialects' counters, and how their socket gauge is rendered. */
export class CompatMetrics {
  /** Frames relayed to a socket, by dialect. */
  readonly relayed: Counter = new Counter(
    "pod_broker_compat_frames_relayed_total",
    "Frames the dialects (y-webrtc, PeerJS, Nostr) relayed to a socket, by dialect.",
    ["dialect"],
  );
  /** Frames and connections refused, by dialect and code. */
  readonly refused: Counter = new Counter(
    "pod_broker_compat_frames_refused_total",
    "Frames and connections the dialects (y-webrtc, PeerJS, Nostr) refused, by dialect and code.",
    ["dialect", "code"],
  );

  /** Records frames relayed to `frames` sockets. */
  relay(dialect: CompatDialect, frames: number): void {
    this.relayed.inc({ dialect: dialectLabel(dialect) }, frames);
  }

  /** Records one refusal. */
  refuse(dialect: CompatDialect, code: string): void {
    this.refused.inc({
      dialect: dialectLabel(dialect),
      code: CODES.has(code) ? code : "other",
    });
  }
}

/**
 * Writes the `pod_broker_compat_sockets` gauge: one series per dialect
 * that is on.
 */
export function renderCompatSockets(
  out: string[],
  counts: CompatSocketCounts,
): void {
  const name = "pod_broker_compat_sockets";
  header(
    out,
    name,
    "Open dialect WebSockets (y-webrtc, PeerJS, Nostr), by dialect.",
    "gauge",
  );
  for (const dialect of COMPAT_DIALECTS) {
    const count = counts[dialect];
    if (count !== undefined) out.push(`${name}{dialect="${dialect}"} ${count}`);
  }
}

function dialectLabel(dialect: string): string {
  return DIALECTS.has(dialect) ? dialect : "other";
}
