// The browser client (src/client/): its size, its signaling side against a
// real broker (Deno has WebSocket; a lone peer makes no RTCPeerConnection,
// only the room's certificate, stubbed here), and the whole of it in real
// Chromium (client_journey.ts, in a child process inside a network
// namespace when it can).
import assert from "node:assert/strict";
import { until } from "../support/ports.ts";
import { within } from "../support/wait.ts";
import { supportFile } from "../support/paths.ts";
import { createSignalServer } from "../../src/adapters/deno.ts";
import { joinRoom, type Room } from "../../src/client/mod.ts";
import { silentLogger } from "../../src/_util/log.ts";
import { MemoryRegistry } from "../../src/registries/memory.ts";
import { browserTest, chromiumNotice, runJourney } from "../support/browser.ts";
import { bundleClient } from "../support/client_bundle.ts";
import { startServer } from "../support/helpers.ts";
import { fakeCertificate } from "../support/fake_certificate.ts";

/**
 * The size budget of the minified and gzipped client (media and private
 * rooms included): 6 KiB until private rooms added about 790 bytes.
 */
const BUDGET = 6.5 * 1024;

Deno.test("client bundle: at most 6.5 KiB minified and gzipped", async () => {
  const code = new TextEncoder().encode(await bundleClient("esm"));
  const gzipped = await new Response(
    new Blob([code]).stream().pipeThrough(new CompressionStream("gzip")),
  ).arrayBuffer();
  console.log(
    `client: ${code.length} B minified, ${gzipped.byteLength} B minified+gzipped`,
  );
  assert.ok(
    gzipped.byteLength <= BUDGET,
    `${gzipped.byteLength} B > ${BUDGET} B`,
  );
  // The public surface survives bundling.
  assert.match(new TextDecoder().decode(code), /export\{/);
});

// Deno has no WebRTC: the room's certificate, with the fingerprint
// 00:01:…:1F (so the peer's id is ALPHABET[0..15]).
fakeCertificate((i) => i);

/**
 * Replaces the global WebSocket with one that records what it sends, so a
 * test can see the client's frames and wait for its sockets to close.
 */
function recordSockets(): {
  sent: string[];
  settled(): Promise<void>;
  [Symbol.dispose](): void;
} {
  const Native = globalThis.WebSocket;
  const sent: string[] = [];
  const closed: Promise<unknown>[] = [];
  globalThis.WebSocket = class extends Native {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      closed.push(
        // bounded: waited for through within() in settled()
        new Promise((resolve) => this.addEventListener("close", resolve)),
      );
    }
    override send(data: string | ArrayBufferLike | Blob | ArrayBufferView) {
      sent.push(String(data));
      super.send(data);
    }
  };
  return {
    sent,
    settled: async () =>
      void await within(Promise.all(closed), "the client's sockets to close"),
    [Symbol.dispose]: () => void (globalThis.WebSocket = Native),
  };
}

function once(room: Room, type: string): Promise<Event> {
  return within(
    new Promise((resolve) =>
      room.addEventListener(type, resolve, { once: true })
    ),
    `the room's ${type} event`,
  );
}

Deno.test("joinRoom() joins the session and reports it", async () => {
  using sockets = recordSockets();
  await using broker = await startServer();
  const room = await joinRoom({
    url: broker.wsUrl,
    session: "unit-join",
    maxMessageBytes: 4,
  });
  // The id comes from the certificate's fingerprint, not from the broker.
  assert.equal(room.peerId, "ABCDEFGHIJKLMNOP");
  assert.equal(room.session, "unit-join");
  assert.equal(room.online, true);
  assert.deepEqual(room.peers, []);
  assert.deepEqual(room.connection("nobody"), { state: "closed", route: null });
  assert.deepEqual(JSON.parse(sockets.sent[0]!), {
    type: "join",
    session: "unit-join",
  });
  const health = await (await fetch(`${broker.url}/health`)).json();
  assert.equal(health.peers, 1);
  assert.throws(
    () => room.send(42 as unknown as string),
    new TypeError(
      "Cannot send: data must be a string, an ArrayBuffer or a typed array",
    ),
  );
  assert.throws(
    () => room.send("hi", { to: "nobody" }),
    new Error('Cannot send: no open channel to "nobody"'),
  );
  assert.throws(
    () => room.send("12345"),
    new RangeError("Cannot send: 5 bytes is more than maxMessageBytes"),
  );
  room.send("1234"); // no peers: nothing to do
  const offline = once(room, "onlinechange");
  room.leave();
  await offline;
  assert.equal(room.online, false);
  assert.throws(
    () => room.send("hi"),
    new Error("Cannot send: the room was left"),
  );
  await sockets.settled();
});

Deno.test("joinRoom() rejects a session the broker would refuse", async () => {
  await assert.rejects(
    () => joinRoom({ url: "ws://127.0.0.1:1/signal", session: "bad session" }),
    new TypeError('Cannot join: invalid session "bad session"'),
  );
  await assert.rejects(
    () =>
      joinRoom({
        url: "ws://127.0.0.1:1/signal",
        session: "ok",
        maxMessageBytes: 0,
      }),
    new TypeError("Cannot join: invalid maxMessageBytes 0"),
  );
  await assert.rejects(
    () =>
      joinRoom({
        url: "ws://127.0.0.1:1/signal",
        session: "ok",
        maxReceiveBytes: -1,
      }),
    new TypeError("Cannot join: invalid maxReceiveBytes -1"),
  );
});

Deno.test("joinRoom() rejects when the broker is unreachable", async () => {
  using sockets = recordSockets();
  // Bind a port, then free it: nothing listens there.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  await assert.rejects(
    () => joinRoom({ url: `ws://127.0.0.1:${port}/signal`, session: "x" }),
    // Browsers say 1006; Deno says 0.
    (error: Error) =>
      /^Cannot join: the signaling socket closed \(\d+\)$/.test(error.message),
  );
  await sockets.settled();
});

Deno.test("joinRoom() rejects when the session is full", async () => {
  using sockets = recordSockets();
  await using broker = await startServer({
    signaling: { maxPeersPerSession: 1 },
  });
  const first = await joinRoom({ url: broker.wsUrl, session: "full" });
  await assert.rejects(
    () => joinRoom({ url: broker.wsUrl, session: "full" }),
    new Error('Cannot join: session_full: Cannot join: session "full" is full'),
  );
  first.leave();
  await sockets.settled();
});

Deno.test("Room rejoins after a broker restart and keeps its peerId", async () => {
  using sockets = recordSockets();
  const registry = new MemoryRegistry();
  const start = (port: number) =>
    createSignalServer({
      registry,
      port,
      hostname: "127.0.0.1",
      logger: silentLogger,
    });
  let server = await start(0);
  const port = server.port;
  try {
    const url = `ws://127.0.0.1:${port}/signal`;
    const room = await joinRoom({ url, session: "restart" });
    const id = room.peerId;
    const offline = once(room, "onlinechange");
    await server.close();
    await offline;
    assert.equal(room.online, false);
    const online = once(room, "onlinechange");
    server = await start(port);
    await online;
    assert.equal(room.online, true);
    assert.equal(room.peerId, id);
    const joins = sockets.sent.filter((text) =>
      JSON.parse(text).type === "join"
    );
    assert.equal(joins.length, 2);
    const health = await (await fetch(`http://127.0.0.1:${port}/health`))
      .json();
    assert.equal(health.peers, 1);
    room.leave();
    await sockets.settled();
  } finally {
    await server.close();
  }
});

Deno.test("Room asks for fresh ICE servers before its TURN credentials expire", async () => {
  using sockets = recordSockets();
  await using broker = await startServer({
    turn: { urls: ["turn:127.0.0.1:3478"], secret: "unit", ttlSeconds: 2 },
  });
  const room = await joinRoom({ url: broker.wsUrl, session: "ice" });
  const iceFrames = () =>
    sockets.sent.filter((text) => JSON.parse(text).type === "ice").length;
  // The first at 80% of two seconds, the next from the answer's expiry.
  await until(() => iceFrames() >= 2, "two ice frames");
  room.leave();
  await sockets.settled();
});

// ---- Chromium -----------------------------------------------------------

const JOURNEY = supportFile("client_journey.ts");
// ICE runs on this address of a veth pair made in the namespace; the ICE
// restart steps remove it and put it back.
const CUT = "pb0/10.77.0.1/24";
const VETH = "ip link add pb0 type veth peer name pb1 && " +
  "ip addr add 10.77.0.1/24 dev pb0 && ip link set pb0 up && ip link set pb1 up";

chromiumNotice("the browser client test");

browserTest(
  "client in Chromium: mesh, 5 MB, ICE restart, broker restart, ICE restart without a broker, glare",
  async () => {
    const result = await runJourney(
      JOURNEY,
      (setup) => setup?.includes("veth") ? ["--cut", CUT] : [],
      [`ip link set lo up && ${VETH}`, "ip link set lo up"],
    );
    const cut = result.setup?.includes("veth") ?? false;
    if (!cut) {
      console.error(
        "note: no network namespace with a veth pair: the ICE restart steps are skipped",
      );
    }
    assert.equal(result.code, 0, result.output);
    for (const step of ["mesh", "5 MB", "broker restart", "glare"]) {
      assert.match(result.output, new RegExp(`^${step} ok$`, "m"));
    }
    if (cut) {
      assert.match(result.output, /^ICE restart ok$/m);
      assert.match(result.output, /^ICE restart while the broker is down ok$/m);
    }
    assert.match(result.output, /client journey ok/);
  },
);
