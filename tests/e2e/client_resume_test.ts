// The browser client's resume (DESIGN section 10.4), on its signaling side
// (Deno has WebSocket; a lone peer makes no RTCPeerConnection, only the
// room's certificate, stubbed here): drained off one broker, it joins the
// broker that replaced it, on the same bus, with the token of its last
// `joined`, and gets its peer id back.
import assert from "node:assert/strict";
import { until } from "../support/ports.ts";
import { within } from "../support/wait.ts";
import { createSignalServer } from "../../src/adapters/deno.ts";
import { joinRoom } from "../../src/client/mod.ts";
import { silentLogger } from "../../src/_util/log.ts";
import { MemoryRegistry } from "../../src/registries/memory.ts";
import { LocalBus } from "../../src/signaling/bus/mod.ts";
import { fakeCertificate } from "../support/fake_certificate.ts";

fakeCertificate(() => 0);

/** The global WebSocket, recording every frame sent and received. */
function recordFrames(): {
  sent: Record<string, unknown>[];
  received: Record<string, unknown>[];
  closed: Promise<unknown>[];
  [Symbol.dispose](): void;
} {
  const Native = globalThis.WebSocket;
  const sent: Record<string, unknown>[] = [];
  const received: Record<string, unknown>[] = [];
  const closed: Promise<unknown>[] = [];
  globalThis.WebSocket = class extends Native {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      this.addEventListener("message", (event) => {
        received.push(JSON.parse((event as MessageEvent).data));
      });
      closed.push(
        // bounded: waited for through within() at the end of the test
        new Promise((resolve) => this.addEventListener("close", resolve)),
      );
    }
    override send(data: string | ArrayBufferLike | Blob | ArrayBufferView) {
      sent.push(JSON.parse(String(data)));
      super.send(data);
    }
  };
  return {
    sent,
    received,
    closed,
    [Symbol.dispose]: () => void (globalThis.WebSocket = Native),
  };
}

Deno.test("Room drained off a broker resumes on its replacement with its token and keeps its signaling id", async () => {
  using frames = recordFrames();
  const bus = new LocalBus();
  const nodes = [bus.connect(), bus.connect()];
  const registry = new MemoryRegistry();
  const start = (port: number, drainSeconds: number) =>
    createSignalServer({
      registry,
      port,
      hostname: "127.0.0.1",
      logger: silentLogger,
      accessLog: "off",
      bus: nodes[port === 0 ? 0 : 1]!,
      drainSeconds,
    });
  const first = await start(0, 1);
  const port = first.port;
  const url = `ws://127.0.0.1:${port}/signal`;
  const room = await joinRoom({ url, session: "client-resume" });
  const joined = frames.received.find((f) => f.type === "joined")!;
  assert.match(joined.resume as string, /^[A-Za-z0-9]{32}$/);
  await first.close();
  const second = await start(port, 0);
  try {
    await until(
      () => frames.received.filter((f) => f.type === "joined").length === 2,
      "the room to join again",
      10_000,
    );
    const joins = frames.sent.filter((f) => f.type === "join");
    assert.deepEqual(joins, [
      { type: "join", session: "client-resume" },
      { type: "join", session: "client-resume", resume: joined.resume },
    ]);
    const resumed = frames.received.filter((f) => f.type === "joined")[1]!;
    assert.equal(resumed.peerId, joined.peerId);
    assert.notEqual(resumed.resume, joined.resume);
    assert.ok(frames.received.some((f) => f.type === "reconnect"));
    assert.equal(room.online, true);
    // The bus has it, under the id it had, on the second broker.
    const { members } = await nodes[1]!.snapshot("client-resume");
    assert.deepEqual([...members], [[joined.peerId, nodes[1]!.node]]);
    room.leave();
    await within(Promise.all(frames.closed), "the room's sockets to close");
  } finally {
    await second.close();
    for (const node of nodes) await node.close();
  }
});
