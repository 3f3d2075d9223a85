// An app written for Trystero (its Nostr strategy, the real npm package),
// built as a signed pod (tests/support/compat_pods.ts) and configured with
// only this broker's /nostr, in Debian's Chromium (run by
// tests/e2e/nostr_test.ts, inside a loopback-only network namespace when it
// can). Two visitors, each in a browser context of its own, find each other
// through the broker and exchange messages both ways; the broker restarts
// on its port, and a third visitor joins them through it.
// Usage: deno run -A tests/support/nostr_journey.ts POD.html
// Prints "journey ok" at the end.
import assert from "node:assert/strict";
import {
  type Browser,
  type BrowserContext,
  chromium,
  type Page,
} from "playwright-core";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { restartableBroker, upload } from "./helpers.ts";

const [podPath] = Deno.args;
assert.ok(podPath, "usage: nostr_journey.ts POD.html");
/** Trystero retries a lost relay after about 3 s, then backs off. */
const WAIT = { timeout: 60_000 };

const contexts: BrowserContext[] = [];
const errors: string[] = [];
let browser: Browser | null = null;
const broker = await restartableBroker({ drainSeconds: 0 });

/** A visitor: a browser context of its own, the pod open in `room`. */
async function visit(url: string, room: string): Promise<Page> {
  const context = await browser!.newContext();
  contexts.push(context);
  // Without a media permission Chromium offers no loopback ICE candidate.
  await context.grantPermissions(["camera", "microphone"]);
  const page = await context.newPage();
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => {
    if (Deno.env.get("JOURNEY_DEBUG")) console.log("page:", message.text());
    // Trystero warns of a relay it retires: it would never come back.
    if (
      /Content Security Policy|Refused to|relay failure/i.test(message.text())
    ) {
      errors.push(message.text());
    }
  });
  await page.goto(`${url}#room=${room}`);
  await page.waitForSelector("#status:text('ready')", WAIT);
  return page;
}

async function selfId(page: Page): Promise<string> {
  return await page.evaluate(() => podTest.selfId);
}

/** Waits until `page` is connected to exactly `peers`. */
async function sees(page: Page, peers: string[]): Promise<void> {
  await page.waitForFunction(
    (expected) => JSON.stringify(podTest.peers()) === expected,
    JSON.stringify([...peers].sort()),
    WAIT,
  );
}

/** Waits until `page` got `data` from `from`. */
async function got(page: Page, from: string, data: unknown): Promise<void> {
  await page.waitForFunction(
    ([peer, text]) =>
      podTest.received.some(([p, d]) =>
        p === peer && JSON.stringify(d) === text
      ),
    [from, JSON.stringify(data)] as const,
    WAIT,
  );
}

try {
  const pod = await Deno.readFile(podPath);
  const uploaded = await upload(broker.url, pod as BodyInit);
  assert.equal(uploaded.status, 201, await uploaded.clone().text());
  const { url } = await uploaded.json();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: CHROMIUM_FLAGS,
  });
  const a = await visit(url, "lobby");
  const b = await visit(url, "lobby");
  const [idA, idB] = [await selfId(a), await selfId(b)];
  await sees(a, [idB]);
  await sees(b, [idA]);
  await a.evaluate(() => podTest.send("hello from a"));
  await b.evaluate(() => podTest.send({ reply: "hi a" }));
  await got(b, idA, "hello from a");
  await got(a, idB, { reply: "hi a" });
  console.log("two peers ok");

  // The broker goes away and comes back on its port: the pages reconnect
  // and subscribe again, and a newcomer finds both through it.
  await broker.stop();
  await broker.start();
  const c = await visit(url, "lobby");
  const idC = await selfId(c);
  await sees(c, [idA, idB]);
  await sees(a, [idB, idC]);
  await sees(b, [idA, idC]);
  await c.evaluate(() => podTest.send("c joined"));
  await got(a, idC, "c joined");
  await got(b, idC, "c joined");
  console.log("third peer after a restart ok");
  assert.deepEqual(
    errors,
    [],
    "no uncaught error, no CSP violation, no retired relay",
  );
  console.log("journey ok");
} finally {
  for (const context of contexts) await context.close().catch(() => {});
  await browser?.close();
  await broker.stop();
}

declare const podTest: {
  selfId: string;
  peers(): string[];
  send(data: unknown): Promise<void>;
  received: [string, unknown][];
};
