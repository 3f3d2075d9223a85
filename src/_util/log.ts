/**
 * A small structured logger: one JSON line per event on standard error,
 * the broker's log. The other writers are the access log (standard output)
 * and the CLI's messages and output (`cli/`).
 *
 * @module
 */

/** Severity of a log event. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** Receives the broker's log events; pass your own to route them elsewhere. */
export type Logger = (
  level: LogLevel,
  message: string,
  fields?: Record<string, unknown>,
) => void;

/**
 * The default logger: writes `{"time","level","msg",...fields}` as one line
 * of JSON to standard error.
 *
 * @param level Severity.
 * @param message What happened.
 * @param fields Extra structured fields; an `Error` value is logged with its
 * message and stack.
 */
export function jsonLogger(
  level: LogLevel,
  message: string,
  fields: Record<string, unknown> = {},
): void {
  const line: Record<string, unknown> = {
    time: new Date().toISOString(),
    level,
    msg: message,
  };
  for (const [key, value] of Object.entries(fields)) {
    line[key] = value instanceof Error
      ? { message: value.message, stack: value.stack }
      : value;
  }
  console.error(JSON.stringify(line));
}

/**
 * A logger that drops every event (useful in tests and embedded use).
 */
export function silentLogger(): void {}
