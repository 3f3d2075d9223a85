// Benchmarks: `deno task bench`. Loopback only, bounded iterations.
import { verifyPod } from "../../src/pod/verify.ts";
import { newSeed, signedPod, startServer, upload } from "../support/helpers.ts";
import { TestClient } from "../support/ws.ts";

const seed = await newSeed();
async function podOfSize(bytes: number): Promise<Uint8Array<ArrayBuffer>> {
  const html = new Uint8Array(bytes).fill(0x61);
  html.set(new TextEncoder().encode("<!doctype html><!--"));
  html.set(new TextEncoder().encode("-->"), bytes - 3);
  return await signedPod(html, {}, seed);
}
const small = await podOfSize(16 * 1024);
const large = await podOfSize(50 * 1024 * 1024 - 1024);

Deno.bench("verifyPod() 16 KiB", { group: "verify" }, async () => {
  await verifyPod(small);
});

Deno.bench("verifyPod() 50 MiB", { group: "verify", n: 10 }, async () => {
  await verifyPod(large);
});

const server = await startServer();
const uploaded = await (await upload(server.url, small)).json();

Deno.bench("POST /pods 16 KiB over loopback", { group: "http" }, async () => {
  const response = await upload(server.url, small);
  await response.body?.cancel();
});

Deno.bench(
  "POST /pods 50 MiB over loopback",
  { group: "http", n: 5 },
  async () => {
    const response = await upload(server.url, large);
    await response.body?.cancel();
  },
);

Deno.bench("GET /:id 16 KiB", { group: "http" }, async () => {
  await (await fetch(uploaded.url)).arrayBuffer();
});

// The per-socket rate limit would stop a benchmark loop: lift it here.
const relay = await startServer({
  signaling: {
    rateLimitBurst: 1_000_000_000,
    rateLimitPerSecond: 1_000_000_000,
  },
});
const a = new TestClient(relay.wsUrl);
const b = new TestClient(relay.wsUrl);
const { peerId: idA } = await a.join("bench");
const { peerId: idB } = await b.join("bench");
await a.next();
const candidate = {
  candidate: {
    candidate: "candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host",
    sdpMid: "0",
  },
};

Deno.bench(
  "signal relay round trip (A -> B -> A)",
  { group: "signaling" },
  async () => {
    a.send({ type: "signal", to: idB, data: candidate });
    await b.next();
    b.send({ type: "signal", to: idA, data: candidate });
    await a.next();
  },
);

globalThis.addEventListener("unload", () => {
  a.ws.close();
  b.ws.close();
  server.server.close();
  relay.server.close();
});
