// The whole journey in real Chromium, run by e2e_chat_test.ts (inside a
// loopback-only network namespace when it can): sign and upload the chat pod,
// open it in two browser contexts, chat, stop the broker, chat on.
// Exits non-zero with the failed assertion; prints "journey ok" at the end.
// Usage: deno run -A tests/support/chat_journey.ts [SCREENSHOT.png]
import assert from "node:assert/strict";
import { startServer } from "./helpers.ts";
import { uploadChatPod } from "./chat_pod.ts";
import { type Browser, chromium } from "playwright-core";
import { SqliteRegistry } from "../../src/registries/sqlite.ts";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { openTab, sideBySide, type Tab } from "./page_watch.ts";

const WAIT = { timeout: 20_000 };
const OPEN_PEERS = '#peers li[data-state="open"]';

/** Console lines that report a CSP violation, and uncaught page errors. */
const violations: string[] = [];
const errors: string[] = [];

function openPod(browser: Browser, url: string): Promise<Tab> {
  const viewport = { width: 640, height: 520 };
  return openTab(browser, url, { viewport, violations, errors });
}

async function waitForOpenPeers(tab: Tab, others: Tab[]): Promise<void> {
  for (const other of others) {
    await tab.page.locator(
      `#peers li[data-peer-id="${other.id}"][data-state="open"]`,
    )
      .waitFor(WAIT);
  }
  assert.equal(await tab.page.locator(OPEN_PEERS).count(), others.length);
}

async function say(from: Tab, text: string, to: Tab[]): Promise<void> {
  await from.page.fill("#input", text);
  await from.page.press("#input", "Enter");
  for (const tab of to) {
    await tab.page.locator(`#log .msg[data-from="${from.id}"]`, {
      hasText: text,
    }).waitFor(WAIT);
  }
}

async function journey(
  browser: Browser,
  screenshotPath: string | undefined,
): Promise<void> {
  const registry = new SqliteRegistry({ dataDir: await Deno.makeTempDir() });
  const server = (await startServer({
    registry,
  })).server;
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
  try {
    const url = `${(await uploadChatPod(broker)).url}#e2e-${
      crypto.randomUUID().slice(0, 8)
    }`;

    const a = await openPod(browser, url);
    const b = await openPod(browser, url);
    await waitForOpenPeers(a, [b]);
    await waitForOpenPeers(b, [a]);
    await say(a, "hello from A", [b]);
    await say(b, "hello from B", [a]);
    const health = await (await fetch(`${broker}/health`)).json();
    assert.deepEqual([health.sessions, health.peers, health.origins], [1, 2, [
      "null",
    ]]);

    // A third peer meshes with both, then leaves.
    const c = await openPod(browser, url);
    await waitForOpenPeers(c, [a, b]);
    await waitForOpenPeers(a, [b, c]);
    await waitForOpenPeers(b, [a, c]);
    await say(c, "hello from C", [a, b]);
    await c.context.close();
    await a.page.locator(`#peers li[data-peer-id="${c.id}"]`).waitFor({
      state: "detached",
      ...WAIT,
    });

    // The broker goes away; the data channels do not need it.
    await server.close();
    for (const tab of [a, b]) {
      await tab.page.waitForSelector('#status[data-state="unreachable"]', WAIT);
    }
    await say(a, "still here, A", [b]);
    await say(b, "still here, B", [a]);
    if (screenshotPath) await sideBySide(browser, [a, b], screenshotPath, 1320);

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

    // Another origin is out of reach, and the browser says why.
    const otherUrl = `http://127.0.0.1:${other.addr.port}`;
    const fetched = await a.page.evaluate(async (target) => {
      try {
        await fetch(target);
        return "fetched";
      } catch (error) {
        return `blocked: ${(error as Error).name}`;
      }
    }, `${otherUrl}/`);
    assert.match(fetched, /^blocked/);
    assert.equal(strayRequests, 0);
    assert.ok(
      violations.some((text) => text.includes(otherUrl)),
      violations.join("\n"),
    );
  } finally {
    await server.close();
    registry.close();
    await other.shutdown();
  }
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: CHROMIUM_FLAGS,
});
try {
  await journey(browser, Deno.args[0]);
  console.log("journey ok");
} finally {
  await browser.close();
}
