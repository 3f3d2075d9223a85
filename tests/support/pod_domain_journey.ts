// An origin per pod in real Chromium, run by tests/e2e/pod_domain_test.ts
// (inside a loopback-only network namespace when it can): a broker with
// `podDomain: "localhost"` serves each pod at http://LABEL.localhost:PORT/,
// which Chromium resolves to loopback without DNS. The broker's /:id lands
// on the pod's origin; the pod's own script and the page write localStorage
// and IndexedDB, which survive a reload and an update of the pod and are
// not visible to a second pod;
// a service worker is refused; the pod host answers nothing but the pod;
// and the 410 of a deleted pod clears the storage of its origin.
// Exits non-zero with the failed assertion; prints "journey ok" at the end.
// Usage: deno run -A tests/support/pod_domain_journey.ts
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { type Browser, chromium, type Page } from "playwright-core";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { buildPod } from "../../src/bundler/mod.ts";
import {
  newSeed,
  putUpdate,
  signedPod,
  startServer,
  upload,
} from "./helpers.ts";

/** A pod whose own script counts its visits in localStorage. */
const POD = `<!doctype html>
<html><head><meta charset=utf-8><title>loading</title>
<script>
try {
  const visits = Number(localStorage.getItem("visits") ?? 0) + 1;
  localStorage.setItem("visits", String(visits));
  document.title = "visits " + visits;
} catch (error) {
  document.title = "no storage: " + error.name;
}
</script></head><body><p>notes</p></body></html>
`;

/** Puts `value` under "note" in IndexedDB "notes" (store "kv"), or reads it. */
function idb(page: Page, value?: string): Promise<string | null> {
  return page.evaluate(
    (value) =>
      new Promise<string | null>((resolve, reject) => {
        const open = indexedDB.open("notes", 1);
        open.onupgradeneeded = () => open.result.createObjectStore("kv");
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const db = open.result;
          const mode = value === undefined ? "readonly" : "readwrite";
          const tx = db.transaction("kv", mode);
          const store = tx.objectStore("kv");
          const get = value === undefined ? store.get("note") : null;
          if (value !== undefined) store.put(value, "note");
          tx.oncomplete = () => {
            db.close();
            resolve(get === null ? value! : get.result ?? null);
          };
          tx.onerror = () => reject(tx.error);
        };
      }),
    value,
  );
}

const stored = (page: Page) =>
  page.evaluate(() => ({
    visits: localStorage.getItem("visits"),
    note: localStorage.getItem("note"),
  }));

async function journey(page: Page): Promise<void> {
  await using server = await startServer({ podDomain: "localhost" });
  const port = server.server.port;
  const pods = [];
  const seed = await newSeed();
  for (let i = 0; i < 2; i++) {
    const pod = await signedPod(
      POD,
      { createdAt: "2026-01-01T00:00:00Z" },
      seed,
    );
    const uploaded = await upload(server.url, pod as BodyInit);
    assert.equal(uploaded.status, 201, await uploaded.clone().text());
    pods.push(await uploaded.json());
  }
  const [first, second] = pods;
  assert.match(
    first.podUrl,
    new RegExp(`^http://[a-z2-7]{20}\\.localhost:${port}/$`),
  );

  // The broker's /:id lands on the pod's own origin.
  const landed = await page.goto(`${server.url}/${first.id}`);
  assert.equal(landed?.status(), 200);
  assert.equal(page.url(), first.podUrl);
  assert.equal(await page.title(), "visits 1", "the pod's script has storage");
  await page.evaluate(() => localStorage.setItem("note", "kept"));
  assert.equal(await idb(page, "kept in idb"), "kept in idb");

  // Both survive a reload.
  await page.reload();
  assert.equal(await page.title(), "visits 2");
  assert.deepEqual(await stored(page), { visits: "2", note: "kept" });
  assert.equal(await idb(page), "kept in idb");

  // ...and an update of the pod: the id, so the origin, stays.
  const v2 = await signedPod(
    POD.replace('"visits " + visits', '"v2 visits " + visits'),
    { createdAt: "2026-02-01T00:00:00Z" },
    seed,
  );
  const updated = await putUpdate(server.url, first.id, v2, seed);
  assert.equal(updated.status, 200, await updated.clone().text());
  assert.equal((await updated.json()).version, 2);
  // (A new URL: the visitor's cache may keep v1 for its max-age.)
  await page.goto(`${first.podUrl}?v2`);
  assert.equal(await page.title(), "v2 visits 3", "v2 runs with v1's storage");
  assert.deepEqual(await stored(page), { visits: "3", note: "kept" });
  assert.equal(await idb(page), "kept in idb");

  // No service worker: default-src 'none' leaves no source for its script.
  const refusal = await page.evaluate(() =>
    navigator.serviceWorker.register("/sw.js").then(
      () => "registered",
      (error) => `${error.name}: ${error.message}`,
    )
  );
  assert.match(refusal, /Content Security Policy/, refusal);

  // The pod host answers the pod and /signal, nothing else.
  const statuses = await page.evaluate(async () => {
    const out: number[] = [];
    for (const [method, path] of [["POST", "/pods"], ["GET", "/health"]]) {
      out.push((await fetch(path!, { method: method! })).status);
    }
    return out;
  });
  assert.deepEqual(statuses, [404, 404]);

  // A second pod has its own, empty storage.
  await page.goto(`${server.url}/${second.id}`);
  assert.equal(page.url(), second.podUrl);
  assert.equal(await page.title(), "visits 1");
  assert.deepEqual(await stored(page), { visits: "1", note: null });
  assert.equal(await idb(page), null);

  // The first pod's storage is still there...
  await page.goto(first.podUrl);
  assert.deepEqual(await stored(page), { visits: "4", note: "kept" });
  // ...until it is deleted: its 410 clears its origin's storage.
  assert.equal(await server.registry.deletePod!(first.id), true);
  // (A new URL: the pod's 200 may be reused from the HTTP cache for its
  // max-age, so a visitor meets the 410 once that has passed.)
  const gone = await page.goto(`${first.podUrl}?after-delete`);
  assert.equal(gone?.status(), 410);
  assert.equal(await gone?.headerValue("Clear-Site-Data"), '"storage"');
  assert.deepEqual(await stored(page), { visits: null, note: null });
  assert.equal(await idb(page), null);
}

/** A fresh browser profile (its own storage) with one page. */
async function freshPage(browser: Browser): Promise<Page> {
  const context = await browser.newContext();
  // Without a media permission Chromium offers no loopback ICE candidate.
  await context.grantPermissions(["camera", "microphone"]);
  return context.newPage();
}

/** How long the example journeys wait for a page. */
const WAIT = { timeout: 15_000 };

/** What a connected example shows. */
const CONNECTED = '#status[data-state="connected"]';

/** Builds examples/`name`, signed with a fresh key, and uploads it to `url`. */
async function uploadExample(
  url: string,
  name: string,
): Promise<{ id: string; podUrl: string }> {
  const entry = new URL(`../../examples/${name}/index.html`, import.meta.url);
  const { html } = await buildPod(entry.pathname, { seed: await newSeed() });
  const uploaded = await upload(url, html as BodyInit);
  assert.equal(uploaded.status, 201, await uploaded.clone().text());
  return await uploaded.json();
}

/**
 * Two visitors, each in a fresh profile, connected at `url`, once the first
 * has a link open to the second.
 */
async function twoVisitors(
  browser: Browser,
  url: string,
): Promise<[Page, Page]> {
  const [a, b] = [await freshPage(browser), await freshPage(browser)];
  for (const page of [a, b]) {
    await page.goto(url);
    await page.waitForSelector(CONNECTED, WAIT);
  }
  const bId = await b.locator("#me").textContent();
  await a.locator(`#peers li[data-peer-id="${bId}"][data-state="open"]`)
    .waitFor(WAIT);
  return [a, b];
}

/**
 * The chat example on its own origin: the browser client reaches the pod
 * host's /signal by default, two visitors of the pod talk, and each one's
 * history survives a reload.
 */
async function chatJourney(browser: Browser): Promise<void> {
  await using server = await startServer({ podDomain: "localhost" });
  const { id } = await uploadExample(server.url, "chat");
  const [a, b] = await twoVisitors(browser, `${server.url}/${id}#history-test`);
  await a.fill("#input", "remember me");
  await a.press("#input", "Enter");
  const heard = b.locator("#log .msg", { hasText: "remember me" });
  await heard.waitFor(WAIT);
  for (const page of [a, b]) {
    await page.reload();
    await page.waitForSelector(CONNECTED, WAIT);
    const kept = await page.locator("#log .msg").allTextContents();
    assert.deepEqual(kept, ["remember me"], "the history is kept");
  }
}

/**
 * The file drop example on its own origin: a received file is listed again
 * on the receiver's next visit.
 */
async function fileDropJourney(browser: Browser): Promise<void> {
  await using server = await startServer({ podDomain: "localhost" });
  const { podUrl } = await uploadExample(server.url, "file-drop");
  const [a, b] = await twoVisitors(browser, `${podUrl}#drop-test`);
  await a.setInputFiles("#file", {
    name: "kept-name.txt",
    mimeType: "text/plain",
    buffer: Buffer.from("hello from a"),
  });
  await b.locator('.transfer[data-direction="in"][data-state="done"]')
    .waitFor(WAIT);
  await b.reload();
  await b.waitForSelector(CONNECTED, WAIT);
  const listed = await b.locator("#received li").allTextContents();
  assert.equal(listed.length, 1, JSON.stringify(listed));
  assert.match(listed[0]!, /^kept-name\.txt · 12 B · from /);
  assert.equal(await b.locator("#received-title").isVisible(), true);
}

if (import.meta.main) {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: CHROMIUM_FLAGS,
  });
  try {
    const context = await browser.newContext();
    await journey(await context.newPage());
    await chatJourney(browser);
    await fileDropJourney(browser);
    console.log("journey ok");
  } finally {
    await browser.close();
  }
}
