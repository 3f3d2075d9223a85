// Where webxdc apps meet a pod's limits, in Chromium, run by
// tests/e2e/webxdc_test.ts, each app imported as a pod on its own origin.
// A visitor that lies in the sync (hello.xdc): visitor H, its page made to
// lie (every summary it sends also claims five updates of an author it has
// none of), sends a message; A opens the link, gets H's message in H's
// answer, finds the claimed updates missing, cuts H and closes the link:
// H's own connection ends, and A still talks with an honest visitor B.
// The conformance app webxdc-test, unmodified: it imports (its links to its
// other pages warned about), the page it frames runs in its frame (built
// into the frame's srcdoc), its WebAssembly check (which fetches a .wasm
// of the bundle) passes, and its update check too, across a reload
// too (with the update its unload script sends). An app whose script builds
// the paths of its files at run time (an image's src as a property, with
// setAttribute, in innerHTML and insertAdjacentHTML markup; a sound by new
// Audio; fetch and XMLHttpRequest of a JSON file) gets them from the pod,
// with no request the policy refuses.
// Exits non-zero with the failed assertion; prints "journey ok" at the end.
// Usage: deno run -A tests/support/webxdc_limits_journey.ts
import assert from "node:assert/strict";
import { type Browser, chromium, type Page } from "playwright-core";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { importApp } from "../../src/cli/import.ts";
import { newSeed, startServer, upload } from "./helpers.ts";
import { watchPage } from "./page_watch.ts";

const SHARED = new URL("../../../shared/webxdc/", import.meta.url).pathname;
const HELLO = `${SHARED}hello.xdc`;
const WAIT = { timeout: 20_000 };
const DOT = new URL("../testdata/build/app/img/dot.png", import.meta.url)
  .pathname;
const BEEP = new URL("../testdata/build/app/media/beep.wav", import.meta.url)
  .pathname;

/** Makes the page's summaries lie, and keeps its connections to look at. */
function lie(): void {
  const fake = "F".repeat(43);
  const stringify = JSON.stringify;
  JSON.stringify = function (value: unknown, ...rest: unknown[]) {
    const message = value as { t?: string; h?: Record<string, number> };
    if (message?.t === "have") {
      value = { ...message, h: { ...message.h, [fake]: 5 } };
    }
    return (stringify as (...args: unknown[]) => string)(value, ...rest);
  } as typeof JSON.stringify;
  const seen: RTCPeerConnection[] = [];
  (globalThis as unknown as { connections: RTCPeerConnection[] }).connections =
    seen;
  const Native = RTCPeerConnection;
  globalThis.RTCPeerConnection = class extends Native {
    constructor(config?: RTCConfiguration) {
      super(config);
      seen.push(this);
    }
  };
}

/** A visitor in a fresh browser profile, its console kept in `lines`. */
async function visit(
  browser: Browser,
  url: string,
  lines: string[],
  hostile = false,
): Promise<Page> {
  const context = await browser.newContext();
  // Without a media permission Chromium offers no loopback ICE candidate.
  await context.grantPermissions(["camera", "microphone"]);
  const page = await context.newPage();
  if (hostile) await page.addInitScript(lie);
  const errors: string[] = [];
  watchPage(page, errors, errors);
  page.on("console", (message) => lines.push(message.text()));
  page.on("pageerror", (error) => lines.push(`page error: ${error.message}`));
  await page.goto(url);
  return page;
}

/** Sends a message with hello.xdc's form. */
async function say(page: Page, text: string): Promise<void> {
  await page.fill("#input", text);
  await page.locator('input[type="submit"]').click();
}

/** The states of the hostile page's connections. */
function states(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    (globalThis as unknown as { connections: RTCPeerConnection[] })
      .connections.map((pc) => pc.connectionState)
  );
}

async function hostileJourney(browser: Browser): Promise<void> {
  await using server = await startServer({ podDomain: "localhost" });
  const { html } = await importApp(HELLO, { seed: await newSeed() });
  const uploaded = await upload(server.url, html as BodyInit);
  assert.equal(uploaded.status, 201, await uploaded.clone().text());
  const link = `${(await uploaded.json()).podUrl}#hostile-room`;

  const heard: string[] = [];
  const h = await visit(browser, link, [], true);
  await say(h, "from h");
  await h.locator("#output", { hasText: "from h" }).waitFor(WAIT);
  const a = await visit(browser, link, heard);
  // A gets H's message in H's answer, then cuts H for what it did not send.
  await a.locator("#output", { hasText: "from h" }).waitFor(WAIT);
  const until = Date.now() + WAIT.timeout;
  while (
    !heard.some((line) => /cut: a summary that claims updates/.test(line))
  ) {
    assert.ok(Date.now() < until, `A never cut H:\n${heard.join("\n")}`);
    await new Promise((done) => setTimeout(done, 100));
  }
  // The link is closed: H's end of it closes too, and stays closed.
  await h.waitForFunction(
    () =>
      (globalThis as unknown as { connections: RTCPeerConnection[] })
        .connections.every((pc) => pc.connectionState === "closed"),
    undefined,
    WAIT,
  );
  assert.ok((await states(h)).length > 0, "H had a connection");
  await new Promise((done) => setTimeout(done, 1_000));
  assert.ok((await states(h)).every((state) => state === "closed"));

  // A still talks with an honest visitor.
  const b = await visit(browser, link, []);
  await say(b, "from b");
  await a.locator("#output", { hasText: "from b" }).waitFor(WAIT);
  await b.locator("#output", { hasText: "from h" }).waitFor(WAIT);
  assert.ok(
    !heard.some((line) => /page error|Content Security Policy/.test(line)),
    heard.join("\n"),
  );
}

/**
 * webxdc-test, unmodified: its framed page runs, and its update check
 * passes, then again after a reload.
 */
async function testAppJourney(browser: Browser): Promise<void> {
  await using server = await startServer({ podDomain: "localhost" });
  const { html, warnings } = await importApp(`${SHARED}webxdc-test.xdc`, {
    seed: await newSeed(),
  });
  assert.deepEqual(warnings, [], "its pages are all in the pod");
  const uploaded = await upload(server.url, html as BodyInit);
  assert.equal(uploaded.status, 201, await uploaded.clone().text());
  const link = `${(await uploaded.json()).podUrl}#conformance`;
  const a = await visit(browser, link, []);
  const runs = async (previous: string, current: string) => {
    await a.locator("#updates-ok").waitFor({ state: "visible", ...WAIT });
    await a.locator("#previous-runs", { hasText: previous }).waitFor(WAIT);
    await a.locator("#current-run", { hasText: current }).waitFor(WAIT);
  };
  await runs("0", "1");
  // Its WebAssembly check fetches /js/call-with-42.wasm: the pod has it.
  await a.locator("#wasm-output", { hasText: "WebAssembly is supported" })
    .waitFor({ state: "attached", ...WAIT });
  // The framed page's own scripts ran in its frame.
  await a.frameLocator("iframe[srcdoc]").getByText(
    "RTCPeerConnection object: function",
  ).waitFor({ state: "attached", ...WAIT });
  const address = await a.evaluate(() =>
    (globalThis as unknown as { webxdc: { selfAddr: string } }).webxdc
      .selfAddr
  );
  await a.getByText(`webxdc.selfAddr: ${address}`).waitFor(WAIT);
  await a.reload();
  // Kept: the last run's update (and those its unload script sent, as
  // many as the browser let finish while the page went away: a number
  // that varies). Each update held is shown once: no duplicate.
  await a.locator("#updates-ok").waitFor({ state: "visible", ...WAIT });
  await a.locator("#current-run", { hasText: "1" }).waitFor(WAIT);
  const [shown, held] = await a.evaluate(async () => [
    Number(document.getElementById("previous-runs")!.textContent),
    (await (globalThis as unknown as {
      webxdc: { getAllUpdates(): Promise<unknown[]> };
    }).webxdc.getAllUpdates()).length,
  ]);
  assert.ok(shown! >= 1, `the last run's update is kept (${shown})`);
  assert.equal(shown, held! - 1, "every update held is shown once");
  await otherPages(a);
}

/**
 * webxdc-test's other pages: its link to the duplicated updates race page
 * shows that page, whose three updates each come once; its link back loads
 * the app's page again; the link its script makes to page.html shows it.
 */
async function otherPages(a: Page): Promise<void> {
  const count = () =>
    a.evaluate(() =>
      (globalThis as unknown as {
        webxdc: { getAllUpdates(): Promise<unknown[]> };
      }).webxdc.getAllUpdates().then((all) => all.length)
    );
  const before = await count();
  await a.locator('a[href="./duplicated_updates_race.html"]').click();
  const race = a.frameLocator("body > iframe");
  await race.getByText("Duplicated Updates Race Test").waitFor(WAIT);
  await race.getByText("Try to trigger update race").click();
  // The page shows each batch of updates it got as [serials].
  const batch = race.locator("#updates > div", { hasText: /^\[[\d,]+\]$/ });
  await batch.first().waitFor(WAIT);
  await a.waitForFunction(
    (expected) =>
      (globalThis as unknown as {
        webxdc: { getAllUpdates(): Promise<unknown[]> };
      }).webxdc.getAllUpdates().then((all) => all.length === expected),
    before + 3,
    WAIT,
  );
  const shown = await race.locator("#updates").innerText();
  assert.doesNotMatch(shown, /Processing duplicated update/, shown);
  const serials = (await batch.allInnerTexts()).flatMap((text) =>
    JSON.parse(text) as number[]
  );
  assert.deepEqual(
    serials.slice(-3),
    [before + 1, before + 2, before + 3],
    shown,
  );
  await race.getByText("< Back").click();
  await a.locator("#updates-ok").waitFor({ state: "visible", ...WAIT });
  // (In a card the page keeps folded: clicked without being seen.)
  await a.getByText("Link to an internal HTML page").dispatchEvent("click");
  await a.frameLocator("body > iframe").getByText(
    "This is just another HTML page",
  ).waitFor(WAIT);
}

/** The app of {@linkcode assetsJourney}: every path built in its script. */
const ASSETS_PAGE = `<!doctype html><meta charset=utf-8>
<script src="webxdc.js"></script><div id="out"></div>
<script>
const dir = "img";
const a = new Image();
a.id = "by-property";
a.src = dir + "/dot.png";
document.body.append(a);
const b = document.createElement("img");
b.id = "by-attribute";
b.setAttribute("src", "./" + dir + "/dot.png");
document.body.append(b);
document.getElementById("out").innerHTML = '<img id="by-markup" src="/' + dir + '/dot.png">';
document.body.insertAdjacentHTML("beforeend", "<img id='by-adjacent' src='img/dot.png?v=1'>");
fetch("data/" + "words.json").then((r) => r.json()).then((w) => { window.fetched = w.words; });
const x = new XMLHttpRequest();
x.open("GET", "data/words.json");
x.onload = () => { window.requested = JSON.parse(x.responseText).words; };
x.send();
const sound = new Audio("sounds/" + "beep.wav");
sound.addEventListener("loadedmetadata", () => { window.heard = sound.duration > 0; });
sound.addEventListener("error", () => { window.heard = false; });
</script>`;

/**
 * The images of {@linkcode ASSETS_PAGE}, one for each way of setting a
 * path, in document order.
 */
export const ASSET_IMAGES: readonly string[] = [
  "by-markup",
  "by-property",
  "by-attribute",
  "by-adjacent",
];

/** The words the app reads from its JSON file, by fetch and by XHR. */
export const ASSET_WORDS: readonly string[] = ["from", "the", "bundle"];

/**
 * The app of {@linkcode ASSETS_PAGE}, imported and uploaded to `broker`.
 *
 * @returns The pod's link, on its own origin.
 */
export async function publishAssetsApp(broker: string): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), "webxdc-assets-"));
  try {
    await mkdir(join(folder, "img"));
    await mkdir(join(folder, "data"));
    await writeFile(join(folder, "index.html"), ASSETS_PAGE);
    await copyFile(DOT, join(folder, "img", "dot.png"));
    await mkdir(join(folder, "sounds"));
    await copyFile(BEEP, join(folder, "sounds", "beep.wav"));
    await writeFile(
      join(folder, "data", "words.json"),
      JSON.stringify({ words: ASSET_WORDS }),
    );
    const { html } = await importApp(folder, { seed: await newSeed() });
    const uploaded = await upload(broker, html as BodyInit);
    assert.equal(uploaded.status, 201, await uploaded.clone().text());
    return `${(await uploaded.json()).podUrl}#assets`;
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/**
 * What the app got once it is done: the images that loaded, and the words
 * read by fetch and by XHR (run in the page).
 */
export function assetsSeen(): false | [string[], unknown, unknown, boolean] {
  const w = globalThis as unknown as {
    fetched?: string[];
    requested?: string[];
    heard?: boolean;
  };
  const images = [...document.images];
  if (
    !w.fetched || !w.requested || w.heard === undefined ||
    !images.every((i) => i.complete)
  ) return false;
  return [
    images.filter((image) => image.naturalWidth > 0).map((image) => image.id),
    w.fetched,
    w.requested,
    w.heard,
  ];
}

/** An app that builds its files' paths in script gets each file from the pod. */
async function assetsJourney(browser: Browser): Promise<void> {
  await using server = await startServer({ podDomain: "localhost" });
  const lines: string[] = [];
  const page = await visit(browser, await publishAssetsApp(server.url), lines);
  const seen = await page.waitForFunction(assetsSeen, undefined, WAIT);
  assert.deepEqual(
    await seen.jsonValue(),
    [ASSET_IMAGES, ASSET_WORDS, ASSET_WORDS, true],
    lines.join("\n"),
  );
  assert.ok(
    !lines.some((line) => /page error|Content Security Policy/.test(line)),
    lines.join("\n"),
  );
}

if (import.meta.main) {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: CHROMIUM_FLAGS,
  });
  try {
    await hostileJourney(browser);
    await testAppJourney(browser);
    await assetsJourney(browser);
    console.log("journey ok");
  } finally {
    await browser.close();
  }
}
