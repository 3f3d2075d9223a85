/**
 * Errors of the PostgreSQL registry: driver errors become plain ones that
 * name the server (host, port, database), keep their SQLSTATE, never show
 * the password or a query's parameters, and say `unavailable` (503) when
 * the server is away.
 *
 * @module
 */

import { scrubSecrets, urlSecrets } from "../_util/secrets.ts";

/** Connection failures, as Node and `postgres` name them. */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EPIPE",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
]);

/**
 * A failed registry action: what could not be done and why, apart, so a
 * caller (the CLI) can say the reason in its own words.
 */
export class PostgresRegistryError extends Error {
  /** What could not be done, such as "open PostgresRegistry". */
  readonly action: string;
  /** Why, with the password scrubbed. */
  readonly reason: string;

  /**
   * Creates the error for one action.
   *
   * @param action What could not be done.
   * @param reason Why.
   */
  constructor(action: string, reason: string) {
    super(`Cannot ${action}: ${reason}`);
    this.name = "PostgresRegistryError";
    this.action = action;
    this.reason = reason;
  }
}

/** Turns driver errors into plain ones for one database URL. */
export class PostgresErrors {
  #target: string;
  #secrets: string[];

  /** @param url The database URL (its password is scrubbed from messages). */
  constructor(url: URL) {
    this.#target = describeTarget(url);
    this.#secrets = urlSecrets(url);
  }

  /**
   * A plain error for `action`: connection failures name the server, server
   * errors keep their SQLSTATE; the password never appears, nor the
   * query's parameters (the client keeps them on its errors).
   */
  wrap(action: string, error: unknown): PostgresRegistryError {
    const code = (error as { code?: unknown })?.code;
    let reason: string;
    if (typeof code === "string" && UNREACHABLE.has(code)) {
      reason = `PostgreSQL at ${this.#target} is unreachable (${code})`;
    } else if (sqlState(error) !== null) {
      reason = `PostgreSQL at ${this.#target} said: ${
        (error as Error).message
      } (${code})`;
    } else {
      reason = error instanceof Error ? error.message : String(error);
    }
    const wrapped = new PostgresRegistryError(action, this.#scrub(reason));
    if (typeof code === "string") {
      Object.assign(wrapped, { code: this.#scrub(code) });
    }
    // The server is away (or going away): the broker answers 503, not 500.
    if (
      typeof code === "string" &&
      (UNREACHABLE.has(code) || /^(08|57P0)/.test(code))
    ) {
      Object.assign(wrapped, { unavailable: true });
    }
    return wrapped;
  }

  #scrub(text: string): string {
    return scrubSecrets(text, this.#secrets);
  }
}

/** The SQLSTATE of a server error, or null. */
export function sqlState(error: unknown): string | null {
  if ((error as Error)?.name !== "PostgresError") return null;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : null;
}

function describeTarget(url: URL): string {
  const host = url.hostname || url.searchParams.get("host") || "localhost";
  const port = url.port || "5432";
  const database = decodeURIComponent(url.pathname.slice(1)) ||
    decodeURIComponent(url.username) || "postgres";
  return `${host}:${port}/${database}`;
}
