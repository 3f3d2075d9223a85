/**
 * The error of the offline pod tools (`parsePod`, `verifyPod`, `signPod`):
 * a coded reason why a file is not a valid pod. The HTTP side turns it into a
 * problem response with the same code; the CLI prints it on one line.
 *
 * @module
 */

/** Why a file is not a valid pod, as DESIGN section 2 orders the checks. */
export type PodErrorCode =
  | "manifest_missing"
  | "manifest_malformed"
  | "signature_invalid"
  | "content_mismatch";

/**
 * A file that is not a valid pod.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PodError } from "./errors.ts";
 *
 * const error = new PodError("manifest_missing", "Cannot find the manifest slot");
 * assert.equal(error.code, "manifest_missing");
 * ```
 */
export class PodError extends Error {
  /** The stable code (the same as the HTTP API's problem code). */
  readonly code: PodErrorCode;

  /**
   * Creates the error with its stable code.
   *
   * @param code The stable code.
   * @param message What is wrong, for a human.
   * @param options Standard error options (`cause`).
   */
  constructor(code: PodErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "PodError";
    this.code = code;
  }
}
