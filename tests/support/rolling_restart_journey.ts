// A rolling restart in real Chromium, run by
// tests/e2e/rolling_restart_browser_test.ts (inside a network namespace when
// it can): two brokers on one Redis bus and one registry, behind nginx
// configured as the operators' docs say (the nginx block of
// docs/operators/proxy.md, the upstream of docs/operators/scale-out.md and
// its rolling restart's `proxy_next_upstream`). Visitors A and B open the
// pod through nginx, join one room, mesh and exchange messages; then broker
// one is drained (server.close()) and started again on its port, then broker
// two. Each visitor is drained at least once and resumes: the same broker
// peer id in every `joined`, a resume token in every join after the first,
// the same data channel and connection (never closed, no new one), no
// peer-left or peer-joined frame and no peerleave event; messages go both
// ways after each restart. Requests through nginx while a broker drains or
// is down all reach the other one (200, never 502 `no live upstreams`).
// Exits non-zero with the failed assertion; prints "rolling restart journey ok".
// Usage: deno run -A tests/support/rolling_restart_journey.ts
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import {
  open,
  type Peer,
  peersOf,
  problems,
  testPod,
  text,
  WAIT,
  waitMeshed,
  type Win,
  withChromium,
} from "./client_pages.ts";
import { blocksOf, blocksRunBy, ROOT } from "./doc_blocks.ts";
import { freePort, sleep, until, waitForPort } from "./ports.ts";
import { within } from "./wait.ts";
import { startRedis } from "./redis.ts";
import { stopChild } from "./child_stop.ts";
import { createSignalServer, MemoryRegistry } from "../../src/mod.ts";
import type { SignalServer } from "../../src/config/types.ts";
import { silentLogger } from "../../src/_util/log.ts";
import {
  createRedisBus,
  type RedisBus,
} from "../../src/signaling/bus/redis.ts";
import { NGINX, nginxMain } from "./nginx.ts";

const PROXY_PAGE = "docs/operators/proxy.md";
const SCALE_PAGE = "docs/operators/scale-out.md";
/** Each broker's drain window: a few seconds. */
const DRAIN_SECONDS = 3;
const SESSION = "rolling-restart";

/** A broker on its own RedisBus; `stop` drains it, `start` brings it back. */
interface Broker {
  /** Its port, the same after a restart. */
  readonly port: number;
  /** Starts it again on its port, with a new bus (as a new process would). */
  start(): Promise<void>;
  /** Drains it (server.close()), then closes its bus. Idempotent. */
  stop(): Promise<void>;
}

async function busBroker(
  registry: MemoryRegistry,
  redisUrl: string,
): Promise<Broker> {
  let port = 0;
  let running: { server: SignalServer; bus: RedisBus } | null = null;
  const start = async () => {
    const bus = await createRedisBus({ url: redisUrl });
    const server = await createSignalServer({
      registry,
      bus,
      port,
      hostname: "127.0.0.1",
      drainSeconds: DRAIN_SECONDS,
      trustProxy: true,
      logger: silentLogger,
      accessLog: "off",
    }).catch(async (error) => {
      await bus.close();
      throw error;
    });
    port = server.port;
    running = { server, bus };
  };
  const stop = async () => {
    const was = running;
    running = null;
    if (was === null) return;
    await was.server.close();
    await was.bus.close();
  };
  await start();
  return {
    get port() {
      return port;
    },
    start,
    stop,
  };
}

/** Ports of nginx: the proxying server, and the page's two others. */
interface FrontPorts {
  http: number;
  redirect: number;
  reject: number;
}

/** The upstream of scale-out.md for `brokers`, and its name. */
async function upstream(brokers: number[]): Promise<[string, string]> {
  const [block] = await blocksRunBy(SCALE_PAGE, "nginx", import.meta.url);
  const name = /upstream (\S+) \{/.exec(block!.text)?.[1];
  assert.ok(name, block!.text);
  assert.ok(block!.text.includes(`proxy_pass http://${name};`));
  const config = ["8081", "8082"].reduce(
    (text, port, i) => text.replace(`:${port}`, `:${brokers[i]}`),
    block!.text,
  );
  assert.doesNotMatch(config, /:808\d/);
  return [name, config];
}

/** The rolling restart's step 2 for nginx, as scale-out.md words it. */
async function nextUpstream(): Promise<string> {
  const page = await Deno.readTextFile(join(ROOT, SCALE_PAGE));
  const rolling = page.slice(page.indexOf("## A rolling restart"));
  const directive = /`(proxy_next_upstream [^`]+;)`/.exec(rolling)?.[1];
  assert.ok(directive, `${SCALE_PAGE} names no proxy_next_upstream`);
  return directive;
}

/**
 * proxy.md's nginx block in plain HTTP on loopback ports (the TLS of it is
 * tls_front_test.ts's business), passing to the brokers' upstream, with the
 * rolling restart's directive in each location that proxies.
 */
async function nginxConfig(
  dir: string,
  ports: FrontPorts,
  brokers: number[],
): Promise<string> {
  const page = await Deno.readTextFile(join(ROOT, PROXY_PAGE));
  const block = blocksOf(PROXY_PAGE, page).find((b) =>
    b.lang === "nginx" && b.section === "nginx"
  );
  assert.ok(block, `${PROXY_PAGE} has no nginx block`);
  const [name, pool] = await upstream(brokers);
  const retry = await nextUpstream();
  const config = block.text
    .replace("listen 80;", `listen 127.0.0.1:${ports.redirect};`)
    .replace(
      "listen 443 ssl default_server;",
      `listen 127.0.0.1:${ports.reject} ssl default_server;`,
    )
    .replace("listen 443 ssl;", `listen 127.0.0.1:${ports.http};`)
    .replaceAll(/^\s*ssl_(certificate|certificate_key|protocols)\s.*\n/gm, "")
    .replaceAll(
      "proxy_pass http://127.0.0.1:8080;",
      `proxy_pass http://${name};\n        ${retry}`,
    );
  assert.doesNotMatch(config, /listen (80|443)\b|:8080|ssl_certificate/);
  assert.equal(config.split(retry).length - 1, 3, config);
  return nginxMain(dir, pool, config);
}

/** nginx in front of `brokers`, in the foreground; `stop` ends it by PID. */
async function startNginx(
  brokers: number[],
): Promise<{ port: number; stop(): Promise<void> }> {
  const dir = await Deno.makeTempDir({ prefix: "rolling-nginx-" });
  // nginx's workers may run as another user: they use this folder.
  await Deno.chmod(dir, 0o755);
  const ports = {
    http: await freePort(),
    redirect: await freePort(),
    reject: await freePort(),
  };
  await Deno.writeTextFile(
    `${dir}/nginx.conf`,
    await nginxConfig(dir, ports, brokers),
  );
  const child = new Deno.Command(NGINX, {
    args: ["-p", dir, "-c", `${dir}/nginx.conf`, "-g", "daemon off;"],
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const stop = async () => {
    await stopChild(child, "SIGTERM", 10_000);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  await waitForPort(ports.http, "nginx", { timeoutMs: 30_000 }).catch(
    async (error) => {
      await stop();
      throw error;
    },
  );
  return { port: ports.http, stop };
}

/**
 * What a page records besides HARNESS, installed before it joins: every
 * frame from the broker but signals (a close too, with its code), whether
 * each join carried a resume token, and each data channel with its
 * connection, and how many closed.
 */
const WATCH = `
const W = window.W = { frames: [], joins: [], dcs: [], closedDcs: 0 };
const NativeSocket = WebSocket;
window.WebSocket = class extends NativeSocket {
  constructor(url, protocols) {
    super(url, protocols);
    W.ws = this;
    this.addEventListener("message", (e) => {
      const f = JSON.parse(e.data);
      if (f.type !== "signal") W.frames.push({ type: f.type, peerId: f.peerId, at: Date.now() });
    });
    this.addEventListener("close", (e) => W.frames.push({ type: "close", code: e.code, at: Date.now() }));
  }
  send(text) {
    const m = JSON.parse(text);
    if (m.type === "join") W.joins.push(typeof m.resume === "string");
    return super.send(text);
  }
};
const createDataChannel = RTCPeerConnection.prototype.createDataChannel;
RTCPeerConnection.prototype.createDataChannel = function (...args) {
  const dc = createDataChannel.apply(this, args);
  W.dcs.push([this, dc]);
  dc.addEventListener("close", () => W.closedDcs++);
  return dc;
};
W.links = () => W.dcs.map(([pc, dc]) => [T.pcs.indexOf(pc), pc.connectionState, dc.readyState]);
W.settled = () => {
  const types = W.frames.map((f) => f.type);
  const [first] = W.links();
  return T.room.online && W.ws.readyState === 1 && types.lastIndexOf("close") < types.lastIndexOf("joined") &&
    first !== undefined && first[1] === "connected" && first[2] === "open";
};
`;

/** A frame a page recorded. */
interface Frame {
  type: string;
  peerId?: string;
  code?: number;
  at: number;
}

/** What {@linkcode WATCH} recorded in a page. */
interface Watched {
  frames: Frame[];
  joins: boolean[];
  closedDcs: number;
  links: [number, string, string][];
  pcs: number;
}

type WatchWin = Win & {
  W: Watched & { links(): Watched["links"]; settled(): boolean };
};

function watched(peer: Peer): Promise<Watched> {
  return peer.page.evaluate(() => {
    const { T, W } = globalThis as unknown as WatchWin;
    const { frames, joins, closedDcs } = W;
    return { frames, joins, closedDcs, links: W.links(), pcs: T.pcs.length };
  });
}

/** Opens the pod through nginx, installs {@linkcode WATCH}, joins. */
async function visit(browser: Browser, url: string): Promise<Peer> {
  const { page } = await open(browser, `${url}#${SESSION}`, false);
  await page.evaluate(WATCH);
  const id = await page.evaluate(() => (globalThis as unknown as Win).T.join());
  assert.match(id, /^[A-Za-z0-9]{16}$/);
  return { page, id };
}

/** The broker's peer id of `peer` (its first `joined`). */
async function brokerId(peer: Peer): Promise<string> {
  const joined = (await watched(peer)).frames.find((f) => f.type === "joined");
  assert.ok(joined?.peerId);
  return joined.peerId;
}

/**
 * Checks that `peer` kept its place and its link to `other` (broker ids
 * `ids`): every `joined` has its id, every join after the first resumed,
 * one connection with one data channel, open, never closed, and since
 * `since` frames no peer-joined or peer-left; one peerjoin event for the
 * other, no peerleave.
 */
async function checkKept(
  peer: Peer,
  other: Peer,
  ids: string[],
  since: number,
): Promise<void> {
  const w = await watched(peer);
  const joined = w.frames.filter((f) => f.type === "joined");
  assert.deepEqual(new Set(joined.map((f) => f.peerId)), new Set([ids[0]]));
  assert.equal(w.joins.length, joined.length, JSON.stringify(w));
  assert.deepEqual(w.joins.slice(1).filter((resumed) => !resumed), []);
  assert.equal(w.pcs, 1, "no new connection was made");
  assert.deepEqual(w.links, [[0, "connected", "open"]]);
  assert.equal(w.closedDcs, 0, "the data channel never closed");
  const membership = w.frames.slice(since).filter((f) =>
    f.type === "peer-joined" || f.type === "peer-left"
  );
  assert.deepEqual(membership, [], `no one left or joined (${ids[1]} stayed)`);
  const events =
    (await peer.page.evaluate(() => (globalThis as unknown as Win).T.events))
      .filter(([type]) => type === "peerjoin" || type === "peerleave");
  assert.deepEqual(events.map(([type, id]) => [type, id]), [[
    "peerjoin",
    other.id,
  ]]);
  assert.equal(
    await peer.page.evaluate(() =>
      (globalThis as unknown as Win).T.room.peerId
    ),
    peer.id,
  );
  assert.deepEqual(await peersOf(peer), [other.id]);
}

/** Waits until `/health` of `port` answers 200 ok with the bus up. */
async function serving(port: number): Promise<void> {
  await until(
    async () => {
      const answer = await fetch(`http://127.0.0.1:${port}/health`).catch(() =>
        null
      );
      const body = await answer?.json().catch(() => null);
      return answer?.status === 200 && body?.status === "ok" &&
        body?.bus === "up";
    },
    `broker ${port} to serve again`,
    WAIT.timeout,
  );
}

/** Asks nginx for `/health`: a live broker must answer 200 ok. */
async function probe(origin: string): Promise<void> {
  const answer = await fetch(`${origin}/health`, {
    signal: AbortSignal.timeout(WAIT.timeout),
  });
  const body = await answer.text();
  assert.equal(answer.status, 200, `through nginx: ${body}`);
  assert.equal(JSON.parse(body).status, "ok", body);
}

/**
 * Drains `broker`, probing nginx all along, and once more while it is
 * down: nginx must reach the other broker every time. Returns the probes.
 */
async function drain(broker: Broker, origin: string): Promise<number> {
  let drained = false;
  const stopping = within(
    broker.stop(),
    `broker ${broker.port} to drain`,
    (DRAIN_SECONDS + 60) * 1000,
  ).finally(() => drained = true);
  let probes = 0;
  try {
    while (!drained) {
      await probe(origin);
      probes++;
      await sleep(100);
    }
  } finally {
    await stopping;
  }
  await probe(origin);
  return probes + 1;
}

/**
 * Restarts `broker` as the rolling restart says (drain, start, wait until
 * it serves), then waits until both visitors are back (joined after their
 * last close, connected), and checks that each kept its place.
 */
async function restart(
  broker: Broker,
  origin: string,
  peers: [Peer, Peer],
  ids: [string, string],
  marks: number[],
): Promise<void> {
  const probes = await drain(broker, origin);
  await broker.start();
  await serving(broker.port);
  console.log(`broker ${broker.port}: ${probes} requests through nginx ok`);
  for (const peer of peers) {
    await peer.page.waitForFunction(
      () => (globalThis as unknown as WatchWin).W.settled(),
      null,
      WAIT,
    ).catch(async (error) => {
      throw new Error(
        `${error.message}\n${JSON.stringify(await watched(peer))}`,
      );
    });
  }
  const [a, b] = peers;
  await checkKept(a, b, ids, marks[0]!);
  await checkKept(b, a, [ids[1], ids[0]], marks[1]!);
  await text(a, `A after broker ${broker.port}`, [b]);
  await text(b, `B after broker ${broker.port}`, [a]);
}

/** How often `peer` was drained, and its longest gap from close to joined. */
function drains(w: Watched): { drained: number; longestGapMs: number } {
  let longestGapMs = 0;
  let closed: number | null = null;
  for (const frame of w.frames) {
    if (frame.type === "close") closed ??= frame.at;
    if (frame.type === "joined" && closed !== null) {
      longestGapMs = Math.max(longestGapMs, frame.at - closed);
      closed = null;
    }
  }
  const drained = w.frames.filter((f) => f.code === 1012).length;
  return { drained, longestGapMs };
}

async function rollingRestart(
  browser: Browser,
  url: string,
  brokers: Broker[],
) {
  const origin = new URL(url).origin;
  const a = await visit(browser, url);
  const b = await visit(browser, url);
  await waitMeshed([a, b]);
  await text(a, "hello from A", [b]);
  await text(b, "hello from B", [a]);
  const ids: [string, string] = [await brokerId(a), await brokerId(b)];
  const marks = await Promise.all(
    [a, b].map(async (peer) => (await watched(peer)).frames.length),
  );
  for (const broker of brokers) {
    await restart(broker, origin, [a, b], ids, marks);
    console.log(`restart of broker ${brokers.indexOf(broker) + 1} ok`);
  }
  await text(a, "A after the rolling restart", [b]);
  await text(b, "B after the rolling restart", [a]);
  for (const [name, peer] of [["A", a], ["B", b]] as const) {
    const seen = drains(await watched(peer));
    console.log(`${name}: ${JSON.stringify(seen)}`);
    assert.ok(seen.drained >= 1, `${name} was drained at least once`);
  }
  assert.deepEqual(problems, [], "no CSP violation or page error");
}

async function journey(browser: Browser): Promise<void> {
  await using redis = await startRedis();
  const registry = new MemoryRegistry();
  const brokers: Broker[] = [];
  let front: { port: number; stop(): Promise<void> } | null = null;
  try {
    brokers.push(await busBroker(registry, redis.url));
    brokers.push(await busBroker(registry, redis.url));
    front = await startNginx(brokers.map((broker) => broker.port));
    const origin = `http://127.0.0.1:${front.port}`;
    const uploaded = await fetch(`${origin}/pods`, {
      method: "POST",
      headers: { "Content-Type": "text/html" },
      body: await testPod() as BodyInit,
    });
    assert.equal(uploaded.status, 201, await uploaded.clone().text());
    const { url } = await uploaded.json();
    assert.ok(url.startsWith(`${origin}/`), url);
    await rollingRestart(browser, url, brokers);
  } finally {
    await front?.stop();
    for (const broker of brokers) await broker.stop();
  }
}

await withChromium(true, journey);
console.log("rolling restart journey ok");
