/**
 * pod-broker's building blocks, for embedding the broker in a server of your
 * own or writing an adapter for another runtime: the request handler
 * (`createBroker`), the signaling hub, the bus, metrics, the options table
 * and the pieces of the pod format.
 *
 * **Unstable.** Anything here may change in any release, minor ones
 * included. The stable surface is the package's main entry.
 *
 * @module
 */

import { createBroker as brokerFrom } from "./http/broker.ts";
import type { Broker } from "./http/broker.ts";
import { resolveOptions } from "./config/options.ts";
import type { SignalServerOptions } from "./config/types.ts";

export type {
  Admission,
  Broker,
  ReadyAnswer,
  RequestHead,
} from "./http/broker.ts";
export type { ObservedRequest } from "./http/observe.ts";
export type { HeaderSource } from "./http/request_url.ts";
export type { CompatAdmission } from "./signaling/compat/dialects.ts";
export type { CompatObserver } from "./signaling/compat/base.ts";
export type { CompatDialect } from "./signaling/compat/limits.ts";
export type { CompatSocketCounts } from "./operator/compat_metrics.ts";
export type { CompatBus, CompatBusListener } from "./signaling/bus/mod.ts";
export { problem } from "./http/problem.ts";
export {
  DEFAULT_MAX_BLOB_BYTES,
  DEFAULT_SIGNALING,
  type OptionKind,
  OPTIONS,
  type OptionSpec,
} from "./config/options.ts";
export { TABLE } from "./config/table.ts";
export type {
  Kind,
  KindRow,
  Kinds,
  KindValue,
  Refuse,
  RefuseText,
} from "./config/kinds.ts";
export type { CliFlagSpec, TableRow } from "./config/table.ts";
export {
  DEFAULT_PERMISSIONS_POLICY,
  DEFAULT_SANDBOX,
  defaultContentPolicy,
  SCRIPT_POLICIES,
} from "./serving/pod_headers.ts";
export type { ScriptHashes } from "./serving/script_hashes.ts";
export { publicKeyFromSeed, sign, verify } from "./pod/ed25519.ts";
export { type ParsedPod, parsePod, SLOT_LITERAL } from "./pod/format.ts";
export { signedMessage } from "./pod/manifest.ts";
export {
  type HubClient,
  type HubStats,
  SignalingHub,
  type SignalPeer,
} from "./signaling/hub.ts";
export type {
  HubSocket,
  SocketDialect,
  SocketEvents,
} from "./signaling/socket_hub.ts";
export { SocketHub } from "./signaling/socket_hub.ts";
export type { Bucket } from "./signaling/rate_limit.ts";
export type { Member } from "./signaling/membership.ts";
export {
  type CandidateData,
  type ClientMessage,
  type JoinMessage,
  type JoinProof,
  type SdpData,
  type SealedData,
  SIGNAL_ERROR_CODES,
  type SignalData,
  type SignalErrorCode,
} from "./signaling/messages.ts";
export type {
  HubOptions,
  PeerSocket,
  SignalingLimits,
} from "./signaling/types.ts";
export {
  type BusDelivery,
  type BusEvent,
  type BusJoinResult,
  type BusListener,
  type BusResume,
  type BusSnapshot,
  type BusState,
  type Held,
  type HeldSignal,
  isBus,
  LocalBus,
} from "./signaling/bus/mod.ts";
export { HeldWindow } from "./signaling/bus/held.ts";
export {
  type DeniableRecord,
  type DenyCode,
  type DenyEntries,
  DenyListError,
  parseDenyList,
} from "./operator/deny_list.ts";
export {
  Metrics,
  type MetricsOptions,
  type MetricsStats,
  type RequestSample,
  type SignalingObserver,
} from "./operator/metrics.ts";

/**
 * The broker's request handler and signaling hub for `options`, checked and
 * with their defaults applied, for a server of your own to call: what
 * `createSignalServer` runs on each runtime.
 *
 * @throws {OptionError} (a `TypeError`) naming the first bad option.
 */
export function createBroker(options: SignalServerOptions): Broker {
  return brokerFrom(resolveOptions(options));
}
