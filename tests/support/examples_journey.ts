// The built examples in Debian's Chromium, run by e2e_examples_test.ts
// (inside a loopback-only network namespace when it can): build
// examples/file-drop/ and examples/chat/ with buildPod, signed, upload them
// to a real broker and open each in two browser contexts.
// - File drop: a 3 MB file goes from A to B in chunks, the progress reaches
//   100% on both sides after many steps, and B saves it (a blob: download)
//   with the same SHA-256; then B sends an image to every peer and A shows
//   its blob: preview.
// - Chat: the manifest's name is the title, each side lists the other as
//   open and direct, messages go both ways, then the broker stops and the
//   chat goes on.
// No CSP violation and no uncaught error in any page. Exits non-zero with
// the failed assertion; prints "journey ok" at the end.
// Usage: deno run -A tests/support/examples_journey.ts [SCREENSHOT_DIR]
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { type Browser, chromium } from "playwright-core";
import { buildPod } from "../../src/bundler/mod.ts";
import { verifyPod } from "../../src/pod/verify.ts";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { openTab, sideBySide, type Tab } from "./page_watch.ts";
import { newSeed, startServer, upload } from "./helpers.ts";

const WAIT = { timeout: 20_000 };
const EXAMPLES = new URL("../../examples/", import.meta.url);

/** Console lines that report a CSP violation, and uncaught page errors. */
const violations: string[] = [];
const errors: string[] = [];

/** Builds an example folder's index.html, signed with a fresh key, and uploads it. */
async function publish(
  broker: string,
  folder: string,
  name: string,
): Promise<string> {
  const entry = new URL(`${folder}/index.html`, EXAMPLES).pathname;
  const { html, warnings } = await buildPod(entry, {
    seed: await newSeed(),
    name,
  });
  assert.deepEqual(warnings, [], `${folder}: ${warnings.join("\n")}`);
  assert.equal((await verifyPod(html)).manifest.name, name);
  const text = new TextDecoder().decode(html);
  assert.doesNotMatch(text, /<script[^>]+src=|<link[^>]+stylesheet/i);
  const uploaded = await upload(broker, html as BodyInit);
  assert.equal(uploaded.status, 201, await uploaded.clone().text());
  return `${(await uploaded.json()).url}#${folder.replace(/\W/g, "")}-${
    crypto.randomUUID().slice(0, 8)
  }`;
}

function open(browser: Browser, url: string, me: string): Promise<Tab> {
  return openTab(browser, url, {
    viewport: { width: 720, height: 560 },
    acceptDownloads: true,
    reportEvents: true,
    me,
    violations,
    errors,
  });
}

async function waitForPeer(tab: Tab, other: Tab, extra = ""): Promise<void> {
  await tab.page.locator(
    `#peers li[data-peer-id="${other.id}"][data-state="open"]${extra}`,
  ).waitFor(WAIT);
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

interface TransferView {
  direction: string;
  name: string;
  size: number;
  done: number;
  state: string;
  updates: number;
}

function transfers(tab: Tab): Promise<TransferView[]> {
  return tab.page.evaluate(() =>
    (globalThis as unknown as {
      podDrop: { transfers(): TransferView[] };
    }).podDrop.transfers()
  );
}

async function fileDrop(
  browser: Browser,
  broker: string,
  screenshots: string | undefined,
): Promise<void> {
  const url = await publish(broker, "file-drop", "File drop");
  const a = await open(browser, url, "#me");
  const b = await open(browser, url, "#me");
  await waitForPeer(a, b);
  await waitForPeer(b, a);
  assert.equal(await a.page.title(), "File drop");

  // A sends 3 MB of random bytes to B alone.
  const file = new Uint8Array(3 * 1024 * 1024 + 12_345);
  for (let i = 0; i < file.length; i += 65_536) {
    crypto.getRandomValues(file.subarray(i, i + 65_536));
  }
  await a.page.selectOption("#to", b.id);
  await a.page.setInputFiles("#file", {
    name: "random.bin",
    mimeType: "application/octet-stream",
    buffer: Buffer.from(file),
  });
  const sent = a.page.locator(
    `.transfer[data-direction="out"][data-peer-id="${b.id}"]`,
  );
  const received = b.page.locator(
    `.transfer[data-direction="in"][data-peer-id="${a.id}"]`,
  );
  for (const [tab, row] of [[a, sent], [b, received]] as const) {
    const done = `.transfer[data-direction="${
      tab === a ? "out" : "in"
    }"][data-state="done"]`;
    await tab.page.locator(done).waitFor(WAIT);
    assert.equal(await row.getAttribute("data-progress"), "100");
    const bar = await row.locator("progress").evaluate((
      element: HTMLProgressElement,
    ) => [element.value, element.max]);
    assert.deepEqual(bar, [file.length, file.length]);
  }
  // Progress came in steps on both sides, not all at once.
  const [out] = await transfers(a);
  const [incoming] = await transfers(b);
  assert.deepEqual(
    [out?.direction, out?.name, out?.size, out?.done, out?.state],
    ["out", "random.bin", file.length, file.length, "done"],
  );
  assert.deepEqual(
    [incoming?.direction, incoming?.name, incoming?.done, incoming?.state],
    ["in", "random.bin", file.length, "done"],
  );
  const chunks = Math.ceil(file.length / (60 * 1024));
  assert.ok(incoming!.updates > chunks, `receiver: ${incoming!.updates} steps`);
  assert.ok(out!.updates > 10, `sender: ${out!.updates} steps`);

  // B saves it: a blob: download with the same bytes.
  const [download] = await Promise.all([
    b.page.waitForEvent("download", WAIT),
    received.locator("a.save").click(),
  ]);
  assert.equal(download.suggestedFilename(), "random.bin");
  const saved = await Deno.readFile((await download.path())!);
  assert.equal(saved.length, file.length);
  assert.equal(sha256(saved), sha256(file));

  // B sends an image to every peer (A): A previews it from a blob: URL.
  const png = await b.page.screenshot({
    clip: { x: 0, y: 0, width: 240, height: 48 },
  });
  await b.page.selectOption("#to", "");
  await b.page.setInputFiles("#file", {
    name: "shot.png",
    mimeType: "image/png",
    buffer: png,
  });
  const preview = a.page.locator(
    `.transfer[data-direction="in"][data-state="done"] img`,
  );
  await preview.waitFor(WAIT);
  const size = await preview.evaluate(async (img: HTMLImageElement) => {
    await img.decode();
    return [img.naturalWidth, img.src.slice(0, 5)];
  });
  assert.deepEqual(size, [240, "blob:"]);
  await b.page.locator(
    '.transfer[data-direction="out"][data-state="done"][data-progress="100"]',
  ).waitFor(WAIT);
  if (screenshots) {
    await a.page.screenshot({ path: `${screenshots}/file-drop.png` });
  }
  await a.context.close();
  await b.context.close();
}

async function say(from: Tab, text: string, to: Tab): Promise<void> {
  await from.page.fill("#input", text);
  await from.page.press("#input", "Enter");
  await from.page.locator('#log .msg[data-from="me"]', { hasText: text })
    .waitFor(WAIT);
  await to.page.locator(`#log .msg[data-from="${from.id}"]`, { hasText: text })
    .waitFor(WAIT);
}

async function chat(
  browser: Browser,
  broker: string,
  stop: () => Promise<void>,
  screenshots: string | undefined,
): Promise<void> {
  const url = await publish(broker, "chat", "Chat");
  const a = await open(browser, url, "#me");
  const b = await open(browser, url, "#me");
  assert.equal(await a.page.locator("#title").textContent(), "Chat");
  assert.equal(await a.page.title(), "Chat");
  // Loopback is a direct route.
  await waitForPeer(a, b, '[data-route="direct"]');
  await waitForPeer(b, a, '[data-route="direct"]');
  assert.equal(await a.page.locator("#peers li").count(), 1);
  await say(a, "hello from A", b);
  await say(b, "hello from B <b>not bold</b>", a);
  assert.equal(await b.page.locator("#log b").count(), 0);
  await a.page.click("#send"); // empty input: nothing sent
  assert.equal(await b.page.locator("#log .msg").count(), 2);

  // The broker goes away; the data channels do not need it.
  await stop();
  for (const tab of [a, b]) {
    await tab.page.waitForSelector('#status[data-state="unreachable"]', WAIT);
  }
  await say(a, "still here, A", b);
  await b.page.fill("#input", "still here, B");
  await b.page.click("#send");
  await a.page.locator(`#log .msg[data-from="${b.id}"]`, {
    hasText: "still here, B",
  }).waitFor(WAIT);
  if (screenshots) {
    await sideBySide(browser, [a, b], `${screenshots}/chat.png`);
  }
  const hook = await a.page.evaluate(() => {
    const { podChat } = globalThis as unknown as {
      podChat: {
        peerId: string;
        openChannels(): number;
        routes(): Record<string, string>;
      };
    };
    return [podChat.peerId, podChat.openChannels(), podChat.routes()];
  });
  assert.deepEqual(hook, [a.id, 1, { [b.id]: "direct" }]);
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: CHROMIUM_FLAGS,
});
try {
  await using broker = await startServer();
  await fileDrop(browser, broker.url, Deno.args[0]);
  await chat(
    browser,
    broker.url,
    () => broker.server.close(),
    Deno.args[0],
  );
  assert.deepEqual(errors, [], `uncaught errors: ${errors.join("\n")}`);
  assert.deepEqual(violations, [], `CSP violations: ${violations.join("\n")}`);
  console.log("journey ok");
} finally {
  await browser.close();
}
