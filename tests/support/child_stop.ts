// Stopping a child process the tests started: a signal it may already be
// past, and SIGKILL if it does not exit in time.

/**
 * Sends `signal` to `child` unless it has exited already.
 *
 * @param child The process.
 * @param signal The signal to send.
 */
export function signalChild(
  child: Deno.ChildProcess,
  signal: Deno.Signal,
): void {
  try {
    child.kill(signal);
  } catch {
    // already gone
  }
}

/**
 * Asks `child` to stop with `signal`, SIGKILLs it after `graceMs`, and waits
 * for its exit.
 *
 * @param child The process.
 * @param signal The polite signal (SIGTERM, or SIGINT for PostgreSQL's fast
 *   shutdown).
 * @param graceMs How long it may take before SIGKILL.
 * @returns Its exit status.
 */
export async function stopChild(
  child: Deno.ChildProcess,
  signal: Deno.Signal,
  graceMs: number,
): Promise<Deno.CommandStatus> {
  signalChild(child, signal);
  const timer = setTimeout(() => signalChild(child, "SIGKILL"), graceMs);
  try {
    return await child.status;
  } finally {
    clearTimeout(timer);
  }
}
