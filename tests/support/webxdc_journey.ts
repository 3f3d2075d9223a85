// Real webxdc apps, unmodified, as a pod on its own origin in Chromium, run
// by tests/e2e/webxdc_test.ts: ../shared/webxdc/poll.xdc imported (the
// runtime in place of its webxdc.js) and uploaded to a broker with
// `podDomain: "localhost"`. Visitor A creates a poll and votes, B (another
// browser profile) sees the poll and A's vote and votes too; B leaves, A
// reloads with nobody online and still has both votes (its log replayed
// from IndexedDB); C opens the link later while A is online and gets the
// whole history. A second instance (another fragment) sees none of it, and
// the signaling socket carries no update: its bytes do not grow with a
// 100 KB update. hello.xdc: selfName is there for its first script, and a
// message shows at the other visitor and survives a reload; on the
// broker's host (no storage) the log is in memory, as the console says once. Exits non-zero with the failed assertion; prints
// "journey ok" at the end.
// Usage: deno run -A tests/support/webxdc_journey.ts
import assert from "node:assert/strict";
import type { Buffer } from "node:buffer";
import { type Browser, chromium, type Page } from "playwright-core";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { importXdc } from "../../src/bundler/xdc_build.ts";
import { newSeed, startServer, upload } from "./helpers.ts";
import { watchPage } from "./page_watch.ts";

const SHARED = new URL("../../../shared/webxdc/", import.meta.url).pathname;
const POLL = `${SHARED}poll.xdc`;
const HELLO = `${SHARED}hello.xdc`;
const WAIT = { timeout: 20_000 };

/** The bytes each visitor's signaling socket sent and received. */
const socketBytes = new WeakMap<Page, { total: number }>();

/** A visitor: a fresh browser profile on `url`, watched. */
async function visit(
  browser: Browser,
  url: string,
  problems: string[],
): Promise<Page> {
  const context = await browser.newContext();
  // Without a media permission Chromium offers no loopback ICE candidate.
  await context.grantPermissions(["camera", "microphone"]);
  const page = await context.newPage();
  watchPage(page, problems, problems);
  const count = { total: 0 };
  socketBytes.set(page, count);
  page.on("websocket", (socket) => {
    const add = (frame: { payload: string | Buffer }) =>
      count.total += frame.payload.length;
    socket.on("framesent", add);
    socket.on("framereceived", add);
  });
  await page.goto(url);
  return page;
}

/** Waits until the page's runtime knows `count` updates. */
async function knows(page: Page, count: number): Promise<void> {
  await page.waitForFunction(
    (count) =>
      (globalThis as unknown as {
        webxdc: { getAllUpdates(): Promise<unknown[]> };
      }).webxdc.getAllUpdates().then((all) => all.length >= count),
    count,
    WAIT,
  );
}

/** In poll.xdc: asks "Lunch?" (Soup or Salad) and votes Soup. */
export async function createPoll(page: Page): Promise<void> {
  await page.fill("#configureQuestion", "Lunch?");
  await page.fill("#configureAnswer0", "Soup");
  await page.fill("#configureAnswer1", "Salad");
  await page.getByText("Create Poll").click();
  await page.locator("#voteRadio0").check();
  await page.getByText("Vote", { exact: true }).click();
  await page.locator("#resultsPage").waitFor({ state: "visible", ...WAIT });
}

/** The poll's results as a visitor sees them. */
async function results(page: Page): Promise<string> {
  await page.getByText("View Results").click();
  return await page.locator("#resultsDiv").innerText();
}

/** Imports a .xdc, uploads it and returns the pod's URL (on its origin, with a pod domain). */
async function publishXdc(broker: string, xdc: string): Promise<string> {
  const { html } = await importXdc(xdc, {
    maxBytes: 50 * 1024 * 1024,
    seed: await newSeed(),
  });
  const uploaded = await upload(broker, html as BodyInit);
  assert.equal(uploaded.status, 201, await uploaded.clone().text());
  const { podUrl, url } = await uploaded.json();
  return podUrl ?? url; // its own origin, or the broker's host
}

/**
 * hello.xdc: reads selfName as its first script runs; A's message shows at
 * B, and at A after a reload with B gone.
 */
async function helloJourney(browser: Browser): Promise<void> {
  await using server = await startServer({ podDomain: "localhost" });
  const link = `${await publishXdc(server.url, HELLO)}#hello-room`;
  const problems: string[] = [];
  const [a, b] = [
    await visit(browser, link, problems),
    await visit(browser, link, problems),
  ];
  assert.match(await a.locator("#deviceName").innerText(), /^this is Visitor /);
  await a.fill("#input", "hi from a");
  await a.locator('input[type="submit"]').click();
  await b.locator("#output", { hasText: "hi from a" }).waitFor(WAIT);
  await b.context().close();
  await a.reload();
  await a.locator("#output", { hasText: "hi from a" }).waitFor(WAIT);
  assert.deepEqual(problems, [], "no CSP refusal, no page error");
}

/**
 * hello.xdc on the broker's host (an opaque origin, no storage): the log
 * lives in memory, the console says so once, and updates still travel.
 */
async function brokerHostJourney(browser: Browser): Promise<void> {
  await using server = await startServer();
  const podUrl = await publishXdc(server.url, HELLO);
  const link = `${podUrl}#on-the-host`;
  const problems: string[] = [];
  const a = await visit(browser, link, problems);
  const notes: string[] = [];
  a.on("console", (message) => notes.push(message.text()));
  await a.reload();
  const b = await visit(browser, link, problems);
  await b.fill("#input", "from b");
  await b.locator('input[type="submit"]').click();
  await a.locator("#output", { hasText: "from b" }).waitFor(WAIT);
  assert.equal(
    notes.filter((text) => /no storage here/.test(text)).length,
    1,
    notes.join("\n"),
  );
  assert.deepEqual(problems, [], "no CSP refusal, no page error");
}

async function journey(browser: Browser): Promise<void> {
  await using server = await startServer({ podDomain: "localhost" });
  const podUrl = await publishXdc(server.url, POLL);
  const link = `${podUrl}#lunch-poll`;
  const problems: string[] = [];

  const a = await visit(browser, link, problems);
  const aSocket = socketBytes.get(a)!;
  const b = await visit(browser, link, problems);
  await createPoll(a);

  // A's poll and vote show at B.
  await b.locator("#voteQuestion", { hasText: "Lunch?" }).waitFor(WAIT);
  await knows(b, 2);
  const heard = await results(b);
  assert.match(heard, /Soup - 1 vote \(100%\)/);
  assert.match(heard, /Salad - 0 votes/);
  await b.getByText("Your Vote").click();
  await b.locator("#voteRadio1").check();
  await b.getByText("Vote", { exact: true }).click();
  await a.locator("#resultsTotalVotes", { hasText: "2" }).waitFor(WAIT);

  // The broker carries no update: a 100 KB update adds no 100 KB to A's socket.
  const before = aSocket.total;
  await a.evaluate(() =>
    (globalThis as unknown as {
      webxdc: { sendUpdate(u: unknown): void };
    }).webxdc.sendUpdate({
      payload: { action: "note", text: "x".repeat(100_000) },
    })
  );
  await knows(b, 4);
  assert.ok(
    aSocket.total - before < 10_000,
    `the signaling socket carried ${aSocket.total - before} bytes`,
  );

  // B leaves; A reloads with nobody online and still has both votes.
  await b.context().close();
  await a.reload();
  await a.locator("#resultsPage").waitFor({ state: "visible", ...WAIT });
  await a.locator("#resultsTotalVotes", { hasText: "2" }).waitFor(WAIT);

  // C comes later, while A is online, and gets the whole history.
  const c = await visit(browser, link, problems);
  await c.locator("#voteQuestion", { hasText: "Lunch?" }).waitFor(WAIT);
  await knows(c, 4);
  const seen = await results(c);
  assert.match(seen, /Soup - 1 vote \(50%\)/);
  assert.match(seen, /Salad - 1 vote \(50%\)/);
  const serials = await c.evaluate(() =>
    (globalThis as unknown as {
      webxdc: { getAllUpdates(): Promise<{ serial: number }[]> };
    }).webxdc.getAllUpdates().then((all) => all.map((u) => u.serial))
  );
  assert.deepEqual(serials, [1, 2, 3, 4], "each update once, serials 1..4");

  // Another instance of the same pod sees nothing of it.
  const other = await visit(browser, `${podUrl}#other-poll`, problems);
  await other.locator("#configurePage").waitFor({ state: "visible", ...WAIT });
  const none = await other.evaluate(() =>
    (globalThis as unknown as {
      webxdc: { getAllUpdates(): Promise<unknown[]> };
    }).webxdc.getAllUpdates().then((all) => all.length)
  );
  assert.equal(none, 0);
  assert.deepEqual(problems, [], "no CSP refusal, no page error");
}

if (import.meta.main) {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: CHROMIUM_FLAGS,
  });
  try {
    await journey(browser);
    await helloJourney(browser);
    await brokerHostJourney(browser);
    console.log("journey ok");
  } finally {
    await browser.close();
  }
}
