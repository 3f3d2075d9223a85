// Tests that need a tool of the machine (a browser, coturn, PostgreSQL,
// Redis, nginx, openssl): ignored where it is missing outside CI, so that a
// developer without it still runs the rest; failed where it is missing in CI,
// so that CI never passes by skipping.

/** Whether this run is CI's (the environment variable `CI` is set). */
export const inCi: boolean = Boolean(Deno.env.get("CI"));

/**
 * Registers a test that needs what `have` says is there.
 *
 * @param name The test's name.
 * @param have Whether the tool is there.
 * @param missing What to say in CI when it is not (what to install).
 * @param fn The test.
 */
export function gatedTest(
  name: string,
  have: boolean,
  missing: string,
  fn: () => Promise<void>,
): void {
  Deno.test({
    name,
    ignore: !have && !inCi,
    async fn() {
      if (!have) throw new Error(missing);
      await fn();
    },
  });
}
