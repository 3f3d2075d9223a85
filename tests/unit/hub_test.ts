// SignalingHub unit tests with recording sockets: its bookkeeping and the
// close deadline, which are internals (CLOSE_DEADLINE_MS is not public), so
// they run on Deno only. The hub over real sockets, on both runtimes, is in
// tests/contract/signaling.ts.
import assert from "node:assert/strict";
import { DEFAULT_SIGNALING } from "../../src/config/options.ts";
import { CLOSE_DEADLINE_MS } from "../../src/signaling/close.ts";
import { SignalingHub } from "../../src/signaling/hub.ts";
import type { SignalingLimits } from "../../src/signaling/types.ts";

const hubWith = (limits: Partial<SignalingLimits> = {}) =>
  new SignalingHub({
    limits: { ...DEFAULT_SIGNALING, allowedOrigins: null, ...limits },
  });

Deno.test("SignalingHub: 1,000 join/leave cycles leave every map empty", () => {
  const hub = hubWith();
  const sent: string[] = [];
  const socket = { send: (text: string) => sent.push(text), close() {} };
  const anchor = hub.connect(socket, "https://anchor.example");
  anchor.message('{"type":"join","session":"anchor"}');
  for (let i = 0; i < 1000; i++) {
    const client = hub.connect(
      socket,
      i % 3 ? "null" : `https://o${i}.example`,
    );
    client.message(
      JSON.stringify({ type: "join", session: i % 2 ? "anchor" : `s${i}` }),
    );
    if (i % 4 === 0) client.message('{"type":"leave"}');
    client.closed();
  }
  assert.deepEqual(hub.stats, {
    sockets: 1,
    sessions: 1,
    peers: 1,
    origins: ["https://anchor.example"],
  });
  anchor.closed();
  assert.deepEqual(hub.stats, {
    sockets: 0,
    sessions: 0,
    peers: 0,
    origins: [],
  });
  assert.ok(sent.length > 1000);
});

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
  const hub = hubWith({ maxBufferedBytes: 1_000 });
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
  const hub = hubWith();
  const socket = fakeSocket();
  const client = hub.connect(socket, null);
  client.message('{"type":"leave"}');
  assert.deepEqual(socket.closed, [1000, "Left"]);
  client.closed();
  await new Promise((resolve) => setTimeout(resolve, CLOSE_DEADLINE_MS + 100));
  assert.equal(socket.terminated, false);
});
