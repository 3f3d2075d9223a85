/**
 * The runtime-neutral public surface of pod-broker: pod tools (keygen, sign,
 * verify), `createPod`, the registries, problem codes and the shared types.
 *
 * @module
 */

export { createPod, type CreatePodOptions } from "./http/create_pod.ts";
export { createBroker } from "./http/broker.ts";
export type { Admission, Broker } from "./http/broker.ts";
export {
  BrokerError,
  problem,
  PROBLEM_CODES,
  type ProblemCode,
} from "./http/problem.ts";
export {
  jsonLogger,
  type Logger,
  type LogLevel,
  silentLogger,
} from "./_util/log.ts";
export {
  DEFAULT_MAX_BLOB_BYTES,
  DEFAULT_SIGNALING,
  OptionError,
  type OptionKind,
  OPTIONS,
  type OptionSpec,
  resolveOptions,
} from "./config/options.ts";
export type {
  ResolvedOptions,
  ResolvedSignalingOptions,
  ResolvedTurnOptions,
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
export type {
  Fields,
  GroupName,
  GroupRows,
  InputFields,
  IsAlways,
  IsOptional,
  IsRequired,
  MemberName,
  Nullable,
  OptionRowsOf,
  OptionsFrom,
  Resolved,
  ResolvedFrom,
  Simplify,
  ValueOf,
} from "./config/derive.ts";
export {
  type IceServer,
  mintTurnCredential,
  type TurnCredential,
  type TurnOptions,
} from "./signaling/ice.ts";
export { PodError, type PodErrorCode } from "./pod/errors.ts";
export {
  DEFAULT_PERMISSIONS_POLICY,
  DEFAULT_SANDBOX,
  defaultContentPolicy,
} from "./serving/pod_headers.ts";
export type { ScriptHashes } from "./serving/script_hashes.ts";
export { POD_PERMISSIONS, type PodPermission } from "./serving/permissions.ts";
export {
  generateKeyPair,
  publicKeyFromSeed,
  sign,
  verify,
} from "./pod/ed25519.ts";
export { decodePrivateKeyPem, encodePrivateKeyPem } from "./pod/keys.ts";
export { type ParsedPod, parsePod, SLOT_LITERAL } from "./pod/format.ts";
export {
  type PodManifest,
  signedMessage,
  type UnsignedManifest,
} from "./pod/manifest.ts";
export { signPod, type SignPodOptions } from "./pod/sign.ts";
export { type VerifiedPod, verifyPod } from "./pod/verify.ts";
export { MemoryRegistry } from "./registries/memory.ts";
export {
  SqliteRegistry,
  type SqliteRegistryOptions,
} from "./registries/sqlite.ts";
export {
  type HubClient,
  type HubStats,
  SignalingHub,
} from "./signaling/hub.ts";
export {
  type CandidateData,
  type ClientMessage,
  type SdpData,
  SIGNAL_ERROR_CODES,
  type SignalData,
  type SignalErrorCode,
} from "./signaling/messages.ts";
export type { PodRecord, Registry } from "./registries/types.ts";
export type {
  HubOptions,
  PeerSocket,
  SignalingLimits,
} from "./signaling/types.ts";
export type {
  PodHeaderOptions,
  SignalingOptions,
  SignalServer,
  SignalServerOptions,
} from "./config/types.ts";
export {
  type Bus,
  type BusDelivery,
  type BusEvent,
  type BusJoinResult,
  type BusListener,
  type BusSnapshot,
  type BusState,
  isBus,
  LocalBus,
} from "./signaling/bus/mod.ts";
export {
  type DeniableRecord,
  type DenyCode,
  type DenyEntries,
  DenyList,
  DenyListError,
  type DenyListInit,
  parseDenyList,
} from "./operator/deny_list.ts";
export { SCRIPT_POLICIES, type ScriptPolicy } from "./serving/pod_headers.ts";
export {
  Metrics,
  type MetricsOptions,
  type MetricsStats,
  type RequestSample,
  type SignalingObserver,
} from "./operator/metrics.ts";
export { VERSION } from "./version.ts";
