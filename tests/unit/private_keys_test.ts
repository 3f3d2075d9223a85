// A private room's seal (src/client/private.ts), in Deno's Web Crypto: what
// a broker could do to a sealed signal, and what the receiving peer does.
import assert from "node:assert/strict";
import { freshSecret, roomKeys } from "../../src/client/private.ts";

Deno.test("a sealed signal opens once for its sender and recipient; altered, redirected or replayed, it does not", async () => {
  const secret = freshSecret();
  const [sender, receiver] = [await roomKeys(secret), await roomKeys(secret)];
  assert.equal(sender.session, receiver.session);
  const sealed = await sender.seal('{"sdp":"v=0"}', "alice", "bob");
  assert.doesNotMatch(sealed, /sdp/, "the broker cannot read it");
  // Another recipient, or another sender, cannot open it.
  await assert.rejects(receiver.open(sealed, "alice", "carol"));
  await assert.rejects(receiver.open(sealed, "mallory", "bob"));
  // One character changed: it does not open.
  const flipped = sealed.slice(0, 20) +
    (sealed[20] === "A" ? "B" : "A") + sealed.slice(21);
  await assert.rejects(receiver.open(flipped, "alice", "bob"));
  // The signal as sent opens, once; the same bytes again are a replay.
  assert.equal(await receiver.open(sealed, "alice", "bob"), '{"sdp":"v=0"}');
  await assert.rejects(receiver.open(sealed, "alice", "bob"), /replayed/);
  // The same text sealed again is a new signal (a fresh IV): it opens.
  const again = await sender.seal('{"sdp":"v=0"}', "alice", "bob");
  assert.notEqual(again, sealed);
  assert.equal(await receiver.open(again, "alice", "bob"), '{"sdp":"v=0"}');
  // Another room's keys open nothing of this one.
  const other = await roomKeys(freshSecret());
  await assert.rejects(other.open(again, "alice", "bob"));
});
