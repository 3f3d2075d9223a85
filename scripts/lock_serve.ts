/**
 * Writes serve.lock: the part of deno.lock that serving loads, and nothing
 * else (see tests/support/serve_lock.ts, which tests/unit/serve_lock_test.ts
 * checks it against).
 *
 *   deno task lock:serve
 *
 * @module
 */

import {
  SERVE_ENTRY_POINTS,
  serveLockText,
} from "../tests/support/serve_lock.ts";

if (import.meta.main) {
  const { text, lock } = await serveLockText();
  await Deno.writeTextFile("serve.lock", text);
  const count = Object.keys(lock.npm).length;
  console.error(
    `serve.lock: ${count} packages for ${SERVE_ENTRY_POINTS.join(" and ")}`,
  );
}
