/**
 * The runtime-neutral stable surface of pod-broker: pod tools (keys, sign,
 * verify), `createPod`, the registries, problem codes and the options a
 * server takes. The building blocks under it (the broker's request handler,
 * the signaling hub, metrics, the options table) are the `./adapter` entry,
 * which may change in any release.
 *
 * @module
 */

export { createPod, type CreatePodOptions } from "./http/create_pod.ts";
export {
  BrokerError,
  PROBLEM_CODES,
  type ProblemCode,
} from "./http/problem.ts";
export {
  jsonLogger,
  type Logger,
  type LogLevel,
  silentLogger,
} from "./_util/log.ts";
export { OptionError } from "./config/options.ts";
export {
  type IceServer,
  mintTurnCredential,
  type TurnCredential,
  type TurnOptions,
} from "./signaling/ice.ts";
export { PodError, type PodErrorCode } from "./pod/errors.ts";
export { generateKeyPair } from "./pod/ed25519.ts";
export { decodePrivateKeyPem, encodePrivateKeyPem } from "./pod/keys.ts";
export type { PodManifest, UnsignedManifest } from "./pod/manifest.ts";
export { signPod, type SignPodOptions } from "./pod/sign.ts";
export {
  signUpdate,
  UPDATE_REPLACES_HEADER,
  UPDATE_SIGNATURE_HEADER,
  updateMessage,
  type UpdateStatement,
  verifyUpdate,
} from "./pod/update.ts";
export { type VerifiedPod, verifyPod } from "./pod/verify.ts";
export { MemoryRegistry } from "./registries/memory.ts";
export {
  SqliteRegistry,
  type SqliteRegistryOptions,
} from "./registries/sqlite.ts";
export type { PodRecord, Registry } from "./registries/types.ts";
export type { Bus } from "./signaling/bus/mod.ts";
export type {
  PodHeaderOptions,
  SignalingOptions,
  SignalServer,
  SignalServerOptions,
} from "./config/types.ts";
export type { ScriptPolicy } from "./serving/pod_headers.ts";
export { POD_PERMISSIONS, type PodPermission } from "./serving/permissions.ts";
export { DenyList, type DenyListInit } from "./operator/deny_list.ts";
export { VERSION } from "./version.ts";
