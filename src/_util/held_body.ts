/**
 * Bodies carried as fields of the web objects they belong to, for an
 * adapter that moves bytes itself (`node:http`), where a web stream between
 * the socket and the broker costs more than the broker's own work on a
 * small answer or upload:
 * - a {@linkcode HeldResponse} has the bytes of a response the broker
 *   builds from bytes it holds (JSON answers, problems, the front page, a
 *   pod's cached `200`), sent with one `end` instead of read from the
 *   `Response`'s stream;
 * - a {@linkcode HeldRequest} says how its body is read, whole or as a
 *   stream, straight from the socket instead of through the `Request`.
 *
 * Either field is optional: a runtime that has none (Deno.serve) reads the
 * web objects as usual.
 *
 * @module
 */

/** A response that may carry its body's bytes beside its stream. */
export interface HeldResponse extends Response {
  /** The body's bytes, never changed; the same as its stream's. */
  readonly heldBytes?: Uint8Array;
}

/**
 * A response whose body is `body`, carried as its
 * {@linkcode HeldResponse.heldBytes}.
 *
 * @param body The bytes, never changed afterwards.
 * @param init Its status and headers.
 * @returns The response.
 */
export function heldResponse(
  body: Uint8Array,
  init: ResponseInit,
): HeldResponse {
  const response = new Response(body as Uint8Array<ArrayBuffer>, init);
  return Object.assign(response, { heldBytes: body });
}

/**
 * The bytes of `response` when it carries them and its body was not read;
 * else undefined (the adapter reads its stream).
 *
 * @param response A response about to be sent.
 * @returns Its bytes, or undefined.
 */
export function heldBody(response: HeldResponse): Uint8Array | undefined {
  return response.bodyUsed ? undefined : response.heldBytes;
}

/**
 * A copy of `response` to send, which carries its bytes too.
 *
 * @param response A response, held or not.
 * @returns Its `clone()`.
 */
export function cloneHeld(response: HeldResponse): HeldResponse {
  const copy = response.clone();
  const { heldBytes } = response;
  return heldBytes === undefined ? copy : Object.assign(copy, { heldBytes });
}

/**
 * A request body that the adapter reads itself, for the one reader of
 * upload bodies (`receiveBody`): whole, for a small body with a known
 * length, or as a stream read as asked. Exactly one of them is called, at
 * most once.
 */
export interface HeldRequestBody {
  /** The whole body, in a buffer of its own. */
  whole(): Promise<Uint8Array>;
  /**
   * The body as a stream that reads nothing until asked. Each chunk is its
   * reader's alone once read (the runtime copied it from the socket, and
   * keeps no reference): the reader may free its memory
   * (`ArrayBuffer.prototype.transfer`) once it has copied it.
   */
  stream(): ReadableStream<Uint8Array>;
}

/** A request whose body the adapter may read itself. */
export interface HeldRequest extends Request {
  /** How its body is read, when not from the `Request` itself. */
  readonly heldBody?: HeldRequestBody;
}

/**
 * `request`, carrying `body` as its {@linkcode HeldRequest.heldBody}.
 *
 * @param request A request whose own body is left unread.
 * @param body How its body is read.
 * @returns `request`.
 */
export function holdRequestBody(
  request: Request,
  body: HeldRequestBody,
): HeldRequest {
  return Object.assign(request, { heldBody: body });
}
