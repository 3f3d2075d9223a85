// The whole journey in real Chromium, run by e2e_chat_test.ts (inside a
// loopback-only network namespace when it can): sign and upload the chat pod,
// open it in two browser contexts, chat, stop the broker, chat on.
// Exits non-zero with the failed assertion; prints "journey ok" at the end.
import assert from "node:assert/strict";
import {
  type Browser,
  type BrowserContext,
  chromium,
  type Page,
} from "playwright-core";
import { createSignalServer } from "../src/adapters/deno.ts";
import { generateKeyPair } from "../src/pod/ed25519.ts";
import { signPod } from "../src/pod/sign.ts";
import { silentLogger } from "../src/log.ts";
import { SqliteRegistry } from "../src/registries/sqlite.ts";

import { CHROMIUM } from "./_chat_journey_config.ts";
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--allow-loopback-in-peer-connection",
];
const WAIT = { timeout: 20_000 };
const screenshotPath = Deno.args[0];

const registry = new SqliteRegistry({ dataDir: await Deno.makeTempDir() });
const server = await createSignalServer({
  registry,
  port: 0,
  hostname: "127.0.0.1",
  logger: silentLogger,
});
const broker = `http://127.0.0.1:${server.port}`;

// A second origin that counts requests: the pod must never reach it.
let strayRequests = 0;
const other = Deno.serve(
  { port: 0, hostname: "127.0.0.1", onListen() {} },
  () => {
    strayRequests++;
    return new Response("reached", {
      headers: { "Access-Control-Allow-Origin": "*" },
    });
  },
);

let browser: Browser | undefined;
try {
  const html = await Deno.readFile(
    new URL("../examples/chat/chat.html", import.meta.url),
  );
  const pod = await signPod(html, (await generateKeyPair()).seed, {
    name: "Chat",
  });
  const uploaded = await fetch(`${broker}/pods`, {
    method: "POST",
    headers: { "Content-Type": "text/html; charset=utf-8" },
    body: pod as BodyInit,
  });
  assert.equal(uploaded.status, 201);
  const { url } = await uploaded.json();
  const session = `e2e-${crypto.randomUUID().slice(0, 8)}`;

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: CHROMIUM_FLAGS,
  });
  const violations: string[] = [];
  const errors: string[] = [];
  async function openPod(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser!.newContext({
      viewport: { width: 640, height: 520 },
    });
    // Without a media permission Chromium offers no loopback ICE candidate.
    await context.grantPermissions(["camera", "microphone"]);
    const page = await context.newPage();
    page.on("console", (message) => {
      const text = message.text();
      if (/Content Security Policy|Refused to/i.test(text)) {
        violations.push(text);
      }
    });
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(`${url}#${session}`);
    return { context, page };
  }
  const peerId = (page: Page) =>
    page.locator("#me").textContent({ timeout: 10_000 });
  async function waitForOpenPeers(page: Page, count: number): Promise<void> {
    await page.locator('#peers li[data-state="open"]').nth(count - 1).waitFor(
      WAIT,
    );
    assert.equal(
      await page.locator('#peers li[data-state="open"]').count(),
      count,
    );
  }
  async function say(
    from: Page,
    text: string,
    to: Page[],
    fromId: string,
  ): Promise<void> {
    await from.fill("#input", text);
    await from.press("#input", "Enter");
    for (const page of to) {
      await page.locator(`#log .msg[data-from="${fromId}"]`, { hasText: text })
        .waitFor(WAIT);
    }
  }

  const a = await openPod();
  await a.page.waitForSelector('#status[data-state="connected"]', WAIT);
  const b = await openPod();
  await waitForOpenPeers(a.page, 1);
  await waitForOpenPeers(b.page, 1);
  const idA = (await a.page.locator("#me").textContent())!;
  const idB = (await peerId(b.page))!;
  assert.match(idA, /^[A-Za-z0-9]{16}$/);
  await a.page.locator(`#peers li[data-peer-id="${idB}"]`).waitFor(WAIT);
  await b.page.locator(`#peers li[data-peer-id="${idA}"]`).waitFor(WAIT);

  await say(a.page, "hello from A", [b.page], idA);
  await say(b.page, "hello from B", [a.page], idB);
  const health = await (await fetch(`${broker}/health`)).json();
  assert.deepEqual([health.sessions, health.peers, health.origins], [1, 2, [
    "null",
  ]]);

  // A third peer meshes with both.
  const c = await openPod();
  await waitForOpenPeers(c.page, 2);
  await waitForOpenPeers(a.page, 2);
  await waitForOpenPeers(b.page, 2);
  const idC = (await peerId(c.page))!;
  await say(c.page, "hello from C", [a.page, b.page], idC);
  await c.context.close();
  await a.page.locator(`#peers li[data-peer-id="${idC}"]`).waitFor({
    state: "detached",
    ...WAIT,
  });

  // The broker goes away; the data channels do not need it.
  await server.close();
  await a.page.waitForSelector('#status[data-state="unreachable"]', WAIT);
  await b.page.waitForSelector('#status[data-state="unreachable"]', WAIT);
  await say(a.page, "still here, A", [b.page], idA);
  await say(b.page, "still here, B", [a.page], idB);

  if (screenshotPath) {
    const shots = [await a.page.screenshot(), await b.page.screenshot()]
      .map((png) =>
        `data:image/png;base64,${btoa(String.fromCharCode(...png))}`
      );
    const frame = await browser.newPage({
      viewport: { width: 1320, height: 540 },
    });
    await frame.setContent(
      `<body style="margin:0;display:flex;gap:20px;background:#d0d4da;padding:10px">` +
        shots.map((src) =>
          `<img src="${src}" style="box-shadow:0 2px 8px #0005">`
        ).join("") +
        "</body>",
    );
    await frame.screenshot({ path: screenshotPath });
  }

  assert.equal(
    violations.length,
    0,
    `CSP violations: ${violations.join("\n")}`,
  );
  assert.equal(errors.length, 0, `uncaught errors: ${errors.join("\n")}`);

  // The pod's origin is opaque: storage throws.
  const storage = await a.page.evaluate(() => {
    try {
      return `no error: ${localStorage.length}`;
    } catch (error) {
      return (error as Error).name;
    }
  });
  assert.equal(storage, "SecurityError");

  // Another origin is out of reach.
  const otherUrl = `http://127.0.0.1:${other.addr.port}/`;
  const fetched = await a.page.evaluate(async (target) => {
    try {
      await fetch(target);
      return "fetched";
    } catch (error) {
      return `blocked: ${(error as Error).name}`;
    }
  }, otherUrl);
  assert.match(fetched, /^blocked/);
  assert.equal(strayRequests, 0);
  assert.ok(
    violations.some((text) => text.includes(otherUrl.slice(0, -1))),
    violations.join(),
  );

  console.log("journey ok");
} finally {
  await browser?.close();
  await server.close();
  registry.close();
  await other.shutdown();
}
