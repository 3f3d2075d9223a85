/**
 * The one refusal of a Redis URL that the CLI words as its own flag's.
 *
 * @module
 */

/**
 * The Redis URL cannot be used: its reason apart, so the CLI can name its
 * flag (the URL, which may hold a password, is never shown).
 */
export class RedisUrlError extends TypeError {
  /** What is wrong with the URL. */
  readonly reason: string;

  /**
   * Creates the error for one reason.
   *
   * @param reason What is wrong with the URL.
   */
  constructor(reason: string) {
    super(`Cannot use the Redis URL: ${reason}`);
    this.name = "RedisUrlError";
    this.reason = reason;
  }
}
