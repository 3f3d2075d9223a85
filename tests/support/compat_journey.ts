// Apps written for y-webrtc (Yjs) and PeerJS, built as signed pods with the
// real npm packages (tests/support/compat_pods.ts), in Debian's Chromium,
// signaling through the broker that serves them (run by
// tests/e2e/compat_test.ts, inside a loopback-only network namespace when it
// can). Each visitor has a browser context of its own, so nothing passes
// between them but through the broker and WebRTC.
// Usage: deno run -A tests/support/compat_journey.ts yjs|peerjs POD.html [--bus]
// With --bus, two brokers share a private Redis and the visitors are spread
// over them. Prints "journey ok" at the end.
import assert from "node:assert/strict";
import {
  type Browser,
  type BrowserContext,
  chromium,
  type Page,
} from "playwright-core";
import { createRedisBus } from "../../src/signaling/bus/redis.ts";
import type { Bus } from "../../src/signaling/bus/mod.ts";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { startServer, type TestServer, upload } from "./helpers.ts";
import { startRedis, type TestRedis } from "./redis.ts";

const [app, podPath, mode] = Deno.args;
assert.ok(app === "yjs" || app === "peerjs", "usage: yjs|peerjs POD [--bus]");
const WAIT = { timeout: 45_000 };

/** A broker, its bus (with --bus) and the pod's URL on it. */
interface Served {
  broker: TestServer;
  bus: Bus | null;
  url: string;
}

const pod = await Deno.readFile(podPath!);
let redis: TestRedis | null = null;
const served: Served[] = [];
const contexts: BrowserContext[] = [];
const errors: string[] = [];
let browser: Browser | null = null;

async function serve(): Promise<Served> {
  const bus = redis === null
    ? null
    // The default heartbeat: a short one lets a stall of a loaded machine
    // take a live broker for dead and free its PeerJS ids.
    : await createRedisBus({ url: redis.url });
  const broker = await startServer(bus === null ? {} : { bus });
  const uploaded = await upload(broker.url, pod as BodyInit);
  assert.equal(uploaded.status, 201, await uploaded.clone().text());
  return { broker, bus, url: (await uploaded.json()).url };
}

/** A visitor: a browser context of its own, the pod open at `hash`. */
async function visit(url: string, hash: string): Promise<Page> {
  const context = await browser!.newContext();
  contexts.push(context);
  // Without a media permission Chromium offers no loopback ICE candidate.
  await context.grantPermissions(["camera", "microphone"]);
  const page = await context.newPage();
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => {
    if (Deno.env.get("JOURNEY_DEBUG")) console.log("page:", message.text());
    if (/Content Security Policy|Refused to/i.test(message.text())) {
      errors.push(message.text());
    }
  });
  await page.goto(`${url}#${hash}`);
  await page.waitForSelector("#status:text('ready')", WAIT);
  return page;
}

/** The brokers' figures of a dialect, summed. */
async function figures(dialect: string): Promise<Record<string, number>> {
  const sum: Record<string, number> = {};
  for (const { broker } of served) {
    const health = await (await fetch(`${broker.url}/health`)).json();
    for (const [key, value] of Object.entries(health.compat[dialect])) {
      sum[key] = (sum[key] ?? 0) + (value as number);
    }
  }
  return sum;
}

/** Waits until `read()` gives `expected` (sockets close a little later). */
async function settles(read: () => Promise<unknown>, expected: unknown) {
  let last: unknown;
  for (let i = 0; i < 100; i++) {
    last = await read();
    if (JSON.stringify(last) === JSON.stringify(expected)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.deepEqual(last, expected);
}

async function yjsJourney(urls: string[]): Promise<void> {
  for (const password of ["", "s3cret pass"]) {
    const room = password === "" ? "clear-room" : "sealed-room";
    const hash = new URLSearchParams({ room, password }).toString();
    const a = await visit(urls[0]!, hash);
    const b = await visit(urls[1 % urls.length]!, hash);
    await a.evaluate(() => podTest.append("A wrote this. "));
    await b.waitForFunction(() => podTest.read().includes("A wrote"), WAIT);
    await b.evaluate(() => podTest.append("B answered. "));
    await a.waitForFunction(() => podTest.read().includes("B answered"), WAIT);
    // Both are one document.
    assert.equal(
      await a.evaluate(() => podTest.read()),
      await b.evaluate(() => podTest.read()),
    );
    // A third visitor comes late and gets the whole document.
    const c = await visit(urls[urls.length - 1]!, hash);
    await c.waitForFunction(
      () =>
        /A wrote this\. B answered\. |B answered\. A wrote this\. /
          .test(podTest.read()),
      WAIT,
    );
    await settles(() => figures("y-webrtc"), {
      sockets: 3,
      topics: served.length,
    });
    for (const page of [a, b, c]) await page.context().close();
    console.log(`yjs ${password === "" ? "clear" : "password"} ok`);
  }
}

async function peerJsJourney(urls: string[]): Promise<void> {
  const alice = await visit(urls[0]!, "id=alice");
  assert.equal(await alice.evaluate(() => podTest.opened()), "open:alice");
  // Bob's id is made by the broker's /peerjs/id.
  const bob = await visit(urls[1 % urls.length]!, "");
  const bobOpened = await bob.evaluate(() => podTest.opened());
  assert.match(bobOpened, /^open:[0-9a-f-]{36}$/);
  const bobId = bobOpened.slice("open:".length);
  await bob.evaluate((to) => podTest.connect(to), "alice");
  await alice.evaluate((from) => podTest.linked(from), bobId);
  await bob.evaluate(() => podTest.send("alice", "hello alice"));
  await alice.evaluate(
    (from) => podTest.send(from, { reply: "hi bob" }),
    bobId,
  );
  await alice.waitForFunction(() => podTest.received.length > 0, WAIT);
  await bob.waitForFunction(() => podTest.received.length > 0, WAIT);
  assert.deepEqual(await alice.evaluate(() => podTest.received), [
    [bobId, "hello alice"],
  ]);
  assert.deepEqual(await bob.evaluate(() => podTest.received), [
    ["alice", { reply: "hi bob" }],
  ]);
  // A second "alice" is refused: unavailable-id.
  const copy = await visit(urls[urls.length - 1]!, "id=alice");
  assert.equal(
    await copy.evaluate(() => podTest.opened()),
    "error:unavailable-id",
  );
  // Alice reconnects to the broker and keeps her id; her link lives on, and
  // a new peer reaches her through the broker.
  assert.deepEqual(await alice.evaluate(() => podTest.reconnect()), [
    "open:alice",
  ]);
  await alice.evaluate((to) => podTest.send(to, "still here"), bobId);
  await bob.waitForFunction(() => podTest.received.length > 1, WAIT);
  const carol = await visit(urls[1 % urls.length]!, "id=carol");
  await carol.evaluate(() => podTest.opened());
  await carol.evaluate((to) => podTest.connect(to), "alice");
  await carol.evaluate(() => podTest.send("alice", "carol here"));
  await alice.waitForFunction(
    () => podTest.received.some(([from]) => from === "carol"),
    WAIT,
  );
  // alice, bob and carol (the copy was refused).
  await settles(async () => (await figures("peerjs")).ids, 3);
  console.log("peerjs ok");
}

try {
  if (mode === "--bus") redis = await startRedis();
  for (let i = 0; i < (mode === "--bus" ? 2 : 1); i++) {
    served.push(await serve());
  }
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: CHROMIUM_FLAGS,
  });
  const urls = served.map(({ url }) => url);
  if (app === "yjs") await yjsJourney(urls);
  else await peerJsJourney(urls);
  assert.deepEqual(errors, [], "no uncaught error and no CSP violation");
  console.log("journey ok");
} finally {
  for (const context of contexts) await context.close().catch(() => {});
  await browser?.close();
  for (const { broker, bus } of served) {
    await broker.server.close();
    await bus?.close();
  }
  await redis?.stop();
}

declare const podTest: {
  append(words: string): void;
  read(): string;
  opened(): Promise<string>;
  connect(to: string): Promise<string>;
  linked(to: string): Promise<unknown>;
  send(to: string, data: unknown): void;
  reconnect(): Promise<string[]>;
  received: [string, unknown][];
};
