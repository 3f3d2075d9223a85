// The browser client's signaling socket (src/client/socket.ts), run on
// Deno's WebSocket against a real broker: a drained socket (`reconnect`,
// then 1012) comes back after a random delay of up to 2 s, not after the
// short backoff of a failure, so that a drained broker's peers do not reach
// the others as a herd.
import assert from "node:assert/strict";
import { Signaling } from "../../src/client/socket.ts";
import { startServer } from "../support/helpers.ts";
import { within } from "../support/wait.ts";

Deno.test("Signaling reconnects after Math.random() × 2 s when the broker drains", async () => {
  await using t = await startServer({ drainSeconds: 1 });
  const joined = Promise.withResolvers<void>();
  const down = Promise.withResolvers<number>();
  const signaling = new Signaling(
    t.wsUrl,
    "drain",
    (frame) => frame.type === "joined" && joined.resolve(),
    (code) => down.resolve(code),
  );
  const { random } = Math;
  const setTimer = globalThis.setTimeout;
  // The delays asked for from the socket's close on (a distinctive random
  // draw makes the client's one easy to tell from the broker's).
  const delays: number[] = [];
  try {
    await within(joined.promise, "the client's join");
    Math.random = () => 0.617;
    globalThis.setTimeout = ((fn: () => void, ms?: number) => {
      delays.push(ms ?? 0);
      return setTimer(fn, ms);
    }) as typeof setTimeout;
    const closing = t.server.close();
    assert.equal(await within(down.promise, "the client's close"), 1012);
    assert.ok(delays.includes(0.617 * 2_000), `delays: ${delays}`);
    await closing;
  } finally {
    Math.random = random;
    globalThis.setTimeout = setTimer;
    signaling.close();
  }
});
