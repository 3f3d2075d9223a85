import assert from "node:assert/strict";
import { DEFAULT_SIGNALING } from "../src/options.ts";
import { CLOSE_DEADLINE_MS, SignalingHub } from "../src/signaling/hub.ts";

/** A recording socket whose unsent bytes the test sets. */
function fakeSocket() {
  const socket = {
    sent: [] as string[],
    closed: null as [number, string] | null,
    terminated: false,
    buffered: 0,
    send(text: string) {
      socket.sent.push(text);
    },
    close(code: number, reason: string) {
      socket.closed = [code, reason];
    },
    bufferedAmount: () => socket.buffered,
    terminate() {
      socket.terminated = true;
    },
  };
  return socket;
}

Deno.test("SignalingHub closes a slow reader with 1013, tells its peers, then terminates it at the deadline", async () => {
  const hub = new SignalingHub({
    ...DEFAULT_SIGNALING,
    maxBufferedBytes: 1_000,
    allowedOrigins: null,
  });
  const [slow, a, b] = [fakeSocket(), fakeSocket(), fakeSocket()];
  const clients = [slow, a, b].map((s) => hub.connect(s, null));
  for (const client of clients) client.message('{"type":"join","session":"s"}');
  const slowId = JSON.parse(slow.sent[0]!).peerId;
  const offer = JSON.stringify({
    type: "signal",
    to: slowId,
    data: { sdp: { type: "offer", sdp: "v=0" } },
  });
  clients[1]!.message(offer);
  assert.equal(slow.closed, null, "under the cap nothing happens");
  slow.buffered = 1_001;
  clients[1]!.message(offer);
  assert.deepEqual(slow.closed, [1013, "Too slow to read"]);
  const left = (s: typeof a) =>
    s.sent.map((t) => JSON.parse(t)).filter((f) => f.type === "peer-left");
  assert.deepEqual(left(a), [{ type: "peer-left", peerId: slowId }]);
  assert.deepEqual(left(b), [{ type: "peer-left", peerId: slowId }]);
  assert.equal(hub.stats.peers, 2);
  // The others are not affected: they still relay to each other.
  const bId = JSON.parse(b.sent[0]!).peerId;
  clients[1]!.message(offer.replace(slowId, bId));
  assert.equal(JSON.parse(b.sent.at(-1)!).type, "signal");
  // A socket that never finishes the closing handshake is terminated.
  assert.equal(slow.terminated, false);
  await new Promise((resolve) => setTimeout(resolve, CLOSE_DEADLINE_MS + 100));
  assert.equal(slow.terminated, true);
  for (const client of clients) client.closed();
  assert.equal(hub.stats.sockets, 0);
});

Deno.test("SignalingHub does not terminate a socket whose close completed in time", async () => {
  const hub = new SignalingHub({ ...DEFAULT_SIGNALING, allowedOrigins: null });
  const socket = fakeSocket();
  const client = hub.connect(socket, null);
  client.message('{"type":"leave"}');
  assert.deepEqual(socket.closed, [1000, "Left"]);
  client.closed();
  await new Promise((resolve) => setTimeout(resolve, CLOSE_DEADLINE_MS + 100));
  assert.equal(socket.terminated, false);
});
