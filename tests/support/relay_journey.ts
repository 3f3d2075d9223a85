// The chat pod through a real coturn, in real Chromium, run by
// e2e_relay_test.ts. Three modes:
//
//   loopback   (inside a loopback-only namespace) two contexts forced to
//              iceTransportPolicy "relay" chat through coturn with only what
//              `joined.iceServers` gave them; without TURN they cannot.
//   restart    (same) the relay goes away mid-chat: ICE restart recovers.
//   hub IP     coturn and a broker on IP; uploads the chat pod, prints
//              "ready URL", runs until its standard input closes.
//   peer URL   one browser opens URL and chats with the peer in the other
//              namespace; prints "result {json}".
//
// Exits non-zero with the failed assertion.
import assert from "node:assert/strict";
import { startServer } from "./helpers.ts";
import { uploadChatPod } from "./chat_pod.ts";
import { type Browser, chromium, type Page } from "playwright-core";
import { createSignalServer } from "../../src/adapters/deno.ts";
import { silentLogger } from "../../src/_util/log.ts";
import { MemoryRegistry } from "../../src/registries/memory.ts";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { watchPage } from "./page_watch.ts";
import { startCoturn } from "./coturn.ts";

const WAIT = { timeout: 20_000 };

/**
 * Forces every RTCPeerConnection of the page to relay-only, as a firewall
 * that lets nothing but the TURN server through would. The pod itself is
 * unchanged: this is the test's doing.
 */
function forceRelay(): void {
  // Runs in the page: typed loosely, Deno has no DOM types here.
  // deno-lint-ignore no-explicit-any
  const page = globalThis as any;
  const Native = page.RTCPeerConnection;
  page.RTCPeerConnection = class RelayOnly extends Native {
    constructor(config = {}) {
      super({ ...config, iceTransportPolicy: "relay" });
    }
    setConfiguration(config = {}) {
      return super.setConfiguration({ ...config, iceTransportPolicy: "relay" });
    }
  };
}

interface Tab {
  page: Page;
  id: string;
  /** performance.now() in the test when the page was asked to load. */
  startedAt: number;
  violations: string[];
}

async function openChat(
  browser: Browser,
  url: string,
  relayOnly: boolean,
): Promise<Tab> {
  const context = await browser.newContext();
  if (relayOnly) await context.addInitScript(forceRelay);
  const page = await context.newPage();
  const violations: string[] = [];
  watchPage(page, violations);
  const startedAt = performance.now();
  await page.goto(url);
  await page.waitForSelector('#status[data-state="connected"]', WAIT);
  const id = (await page.locator("#me").textContent())!;
  return { page, id, startedAt, violations };
}

function openPeer(tab: Tab, peerId: string) {
  return tab.page.locator(
    `#peers li[data-peer-id="${peerId}"][data-state="open"]`,
  );
}

/** Waits until `a` and `b` each have the other open. */
async function waitOpen(a: Tab, b: Tab): Promise<void> {
  await openPeer(a, b.id).waitFor(WAIT);
  await openPeer(b, a.id).waitFor(WAIT);
}

async function say(from: Tab, text: string, to: Tab): Promise<void> {
  await from.page.fill("#input", text);
  await from.page.press("#input", "Enter");
  await to.page.locator(`#log .msg[data-from="${from.id}"]`, { hasText: text })
    .waitFor(WAIT);
}

/** The candidate types of the pair `tab` uses to reach `peerId`. */
async function pairOf(
  tab: Tab,
  peerId: string,
): Promise<{ local: string; remote: string }> {
  const routes = await tab.page.evaluate(() =>
    (globalThis as unknown as {
      podChat: { routes(): Promise<Record<string, unknown>> };
    }).podChat.routes()
  );
  return routes[peerId] as { local: string; remote: string };
}

async function uploadChat(broker: string): Promise<string> {
  return (await uploadChatPod(broker)).url;
}

/**
 * Two relay-only tabs in a fresh session (named after `tag`) of a chat pod
 * uploaded to the broker on 127.0.0.1:`port`.
 */
async function relayOnlyPair(
  browser: Browser,
  port: number,
  tag: string,
): Promise<[Tab, Tab]> {
  const url = `${await uploadChat(`http://127.0.0.1:${port}`)}#${tag}-${
    crypto.randomUUID().slice(0, 8)
  }`;
  return [
    await openChat(browser, url, true),
    await openChat(browser, url, true),
  ];
}

function launch(extra: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      ...CHROMIUM_FLAGS,
      // Real host addresses instead of mDNS names, so that a direct path
      // would be found if there were one.
      "--disable-features=WebRtcHideLocalIpsWithMdns",
      ...extra,
    ],
  });
}

/** Loopback: relay-only browsers connect through coturn, and only with TURN. */
async function loopback(): Promise<void> {
  const secret = `secret-${crypto.randomUUID()}`;
  await using coturn = await startCoturn({ secret, allowLoopbackPeers: true });
  const browser = await launch();
  try {
    // With TURN: the relay-only pair connects, relay to relay.
    const withTurn = (await startServer({
      registry: new MemoryRegistry(),
      turn: {
        urls: [`turn:127.0.0.1:${coturn.port}`],
        secret,
        ttlSeconds: 5,
      },
    })).server;
    const [a, b] = await relayOnlyPair(browser, withTurn.port, "relay");
    await waitOpen(a, b);
    await say(a, "through the relay", b);
    const firstMessageMs = performance.now() - a.startedAt;
    const pairs = [await pairOf(a, b.id), await pairOf(b, a.id)];
    for (const pair of pairs) {
      assert.deepEqual(pair, { local: "relay", remote: "relay" });
    }
    for (const [tab, other] of [[a, b], [b, a]] as const) {
      await tab.page.locator(
        `#peers li[data-peer-id="${other.id}"][data-route="relayed"]`,
      ).waitFor(WAIT);
    }
    // The TURN credential is refreshed (an `ice` frame) before it expires,
    // and the chat goes on past the first credential's expiry.
    const usernames = () =>
      a.page.evaluate(() =>
        (globalThis as unknown as {
          podChat: { iceServers: { username?: string }[] };
        }).podChat.iceServers.map((s) => s.username).join()
      );
    const first = await usernames();
    const refreshBy = Date.now() + 10_000;
    while ((await usernames()) === first) {
      assert.ok(Date.now() < refreshBy, "the ICE servers were not refreshed");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await say(b, "after the first credential expired", a);
    assert.deepEqual([...a.violations, ...b.violations], []);
    await a.page.context().close();
    await b.page.context().close();
    await withTurn.close();

    // Without TURN, the same relay-only browsers never connect.
    const withoutTurn = (await startServer({
      registry: new MemoryRegistry(),
    })).server;
    const [c, d] = await relayOnlyPair(browser, withoutTurn.port, "plain");
    await c.page.locator(`#peers li[data-peer-id="${d.id}"]`).waitFor(WAIT);
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    assert.equal(
      await c.page.locator('#peers li[data-state="open"]').count(),
      0,
    );
    assert.equal(
      await d.page.locator('#peers li[data-state="open"]').count(),
      0,
    );
    await withoutTurn.close();
    console.log(
      `result ${
        JSON.stringify({
          mode: "loopback",
          pairs,
          firstMessageMs: Math.round(firstMessageMs),
        })
      }`,
    );
  } finally {
    await browser.close();
  }
}

/**
 * ICE restart: the relay the pair uses goes away (coturn is replaced by a
 * fresh one at the same URL, without the old allocations). The connection
 * fails, the side that offered restarts ICE, and the chat goes on through
 * new relay candidates.
 */
async function restart(): Promise<void> {
  const secret = `secret-${crypto.randomUUID()}`;
  const first = await startCoturn({ secret, allowLoopbackPeers: true });
  const port = first.port;
  let second: Awaited<ReturnType<typeof startCoturn>> | undefined;
  const browser = await launch();
  const server = (await startServer({
    registry: new MemoryRegistry(),
    turn: { urls: [`turn:127.0.0.1:${port}`], secret, ttlSeconds: 3600 },
  })).server;
  try {
    const [a, b] = await relayOnlyPair(browser, server.port, "restart");
    await waitOpen(a, b);
    await say(a, "before the relay went away", b);
    const before = await pairOf(b, a.id);
    assert.deepEqual(before, { local: "relay", remote: "relay" });

    await first.stop();
    const lostAt = performance.now();
    second = await startCoturn({ secret, allowLoopbackPeers: true, port });
    // b joined last, so b offered, and b restarts ICE.
    await b.page.locator("#log .note", { hasText: "restarting ICE" }).waitFor({
      timeout: 60_000,
    });
    const failedAfterMs = performance.now() - lostAt;
    await say(b, "after the ICE restart", a);
    await say(a, "and back", b);
    const recoveredAfterMs = performance.now() - lostAt;
    // One restart, by the side that offered; nobody gave up.
    const notes = async (tab: Tab) =>
      await tab.page.locator("#log .note").allTextContents();
    const restarts = (await notes(b)).filter((n) => /restarting ICE/.test(n));
    assert.equal(restarts.length, 1, restarts.join("\n"));
    assert.deepEqual(
      (await notes(a)).filter((n) => /restarting ICE|failed/.test(n)),
      [],
    );
    const after = await pairOf(b, a.id);
    assert.deepEqual(after, { local: "relay", remote: "relay" });
    // The new path runs through the new coturn.
    assert.match(await second.log(), /ALLOCATE processed, success/);
    assert.deepEqual([...a.violations, ...b.violations], []);
    console.log(
      `result ${
        JSON.stringify({
          mode: "restart",
          note: restarts[0],
          before,
          after,
          failedAfterMs: Math.round(failedAfterMs),
          recoveredAfterMs: Math.round(recoveredAfterMs),
        })
      }`,
    );
  } finally {
    await browser.close();
    await server.close();
    await first.stop();
    await second?.stop();
  }
}

/** The hub namespace: coturn and the broker on `ip`. */
async function hub(ip: string): Promise<void> {
  const secret = `secret-${crypto.randomUUID()}`;
  await using coturn = await startCoturn({ secret, ip });
  const server = await createSignalServer({
    registry: new MemoryRegistry(),
    port: 0,
    hostname: ip,
    logger: silentLogger,
    accessLog: "off",
    turn: { urls: [`turn:${ip}:${coturn.port}`], secret, ttlSeconds: 600 },
  });
  try {
    const url = await uploadChat(`http://${ip}:${server.port}`);
    console.log(`ready ${url}`);
    // Until the test closes our standard input.
    for await (const _ of Deno.stdin.readable) {
      // discard
    }
  } finally {
    await server.close();
  }
}

/** One browser in its own namespace: chat with the other one. */
async function peer(url: string, name: string): Promise<void> {
  const browser = await launch();
  try {
    const tab = await openChat(browser, url, false);
    const other = tab.page.locator('#peers li[data-state="open"]');
    await other.waitFor({ timeout: 30_000 });
    const otherId = (await other.getAttribute("data-peer-id"))!;
    await tab.page.fill("#input", `hello from ${name}`);
    await tab.page.press("#input", "Enter");
    await tab.page.locator(`#log .msg[data-from="${otherId}"]`).waitFor({
      timeout: 30_000,
    });
    const firstMessageMs = performance.now() - tab.startedAt;
    // The route shown settles with the selected pair: wait for it.
    await tab.page.locator(
      `#peers li[data-peer-id="${otherId}"][data-route="relayed"]`,
    ).waitFor({ timeout: 10_000 }).catch(() => {});
    const pair = await pairOf(tab, otherId);
    const route = await other.getAttribute("data-route");
    // Let the other side receive our message before the page goes away.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    assert.deepEqual(tab.violations, []);
    console.log(
      `result ${
        JSON.stringify({
          mode: "peer",
          name,
          pair,
          route,
          firstMessageMs: Math.round(firstMessageMs),
        })
      }`,
    );
  } finally {
    await browser.close();
  }
}

const [mode, arg, name] = Deno.args;
if (mode === "loopback") await loopback();
else if (mode === "restart") await restart();
else if (mode === "hub" && arg) await hub(arg);
else if (mode === "peer" && arg) await peer(arg, name ?? "peer");
else throw new Error(`Cannot run: unknown mode '${mode}'`);
console.log("relay journey ok");
