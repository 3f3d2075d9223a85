// Signed updates in real Chromium, run by tests/e2e/update_test.ts (inside a
// loopback-only network namespace when it can). For a broker on one host,
// and for one with `podDomain: "localhost"` (the pod on its own origin):
// an author publishes v1 with the CLI; a visitor opens it; the author
// publishes v2 with `publish --update ID --key`; the visitor's page, which
// asks the browser client's checkForUpdate() every 200 ms, shows "new
// version available"; after a reload it runs v2 at the same URL.
// Exits non-zero with the failed assertion; prints "journey ok" at the end.
// Usage: deno run -A tests/support/update_journey.ts
import assert from "node:assert/strict";
import { join } from "node:path";
import { chromium, type Page } from "playwright-core";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { bundleClient } from "./client_bundle.ts";
import { cli, startServer } from "./helpers.ts";

/** A pod that says which version it is, and when a newer one is served. */
function podPage(client: string, version: string): string {
  return `<!doctype html>
<html><head><meta charset=utf-8><title>Notes ${version}</title>
<script>${client}</script>
<script>
addEventListener("DOMContentLoaded", () => {
  const served = PodClient.servedVersion();
  document.getElementById("served").textContent = served ? served.createdAt : "none";
  const timer = setInterval(async () => {
    try {
      const newer = await PodClient.checkForUpdate();
      if (!newer) return;
      clearInterval(timer);
      const banner = document.getElementById("update");
      banner.textContent = "new version available (" + newer.createdAt + ")";
      banner.hidden = false;
    } catch (error) {
      document.getElementById("error").textContent = String(error);
    }
  }, 200);
});
</script></head>
<body><h1 id="version">${version}</h1><p id="served"></p>
<p id="update" hidden></p><p id="error"></p></body></html>
`;
}

async function publish(args: string[]): Promise<string> {
  const run = await cli(["publish", ...args]);
  assert.equal(run.code, 0, run.stderr);
  return run.stdout;
}

async function journey(
  page: Page,
  folder: string,
  podDomain: string | null,
): Promise<void> {
  await using server = await startServer(podDomain ? { podDomain } : {});
  const client = await bundleClient("iife");
  const key = join(folder, "author.key");
  if ((await Deno.stat(key).catch(() => null)) === null) {
    const made = await cli(["keygen", "--out", key]);
    assert.equal(made.code, 0, made.stderr);
  }
  const v1 = join(folder, "v1.html");
  const v2 = join(folder, "v2.html");
  await Deno.writeTextFile(v1, podPage(client, "v1"));
  await Deno.writeTextFile(v2, podPage(client, "v2"));

  // The author publishes v1; a visitor opens it.
  const out = await publish([v1, "--broker", server.url, "--key", key]);
  const url = /https?:\/\/\S+/.exec(out)?.[0];
  assert.ok(url, `publish printed no URL: ${out}`);
  const id = new URL(url).pathname.slice(1);
  await page.goto(`${server.url}/${id}`);
  const landed = page.url();
  assert.equal(await page.textContent("#version"), "v1");
  if (podDomain) assert.match(landed, /^http:\/\/[a-z2-7]{20}\.localhost:/);
  // Still the same version a few checks later.
  await page.waitForTimeout(600);
  assert.equal(await page.isHidden("#update"), true);
  assert.equal(await page.textContent("#error"), "");

  // The author publishes v2 at the same id.
  const updated = await publish([
    v2,
    "--broker",
    server.url,
    "--key",
    key,
    "--update",
    id,
  ]);
  assert.match(updated, new RegExp(id));
  await page.waitForSelector("#update:not([hidden])", { timeout: 20_000 });
  assert.match(
    (await page.textContent("#update"))!,
    /^new version available \(\d{4}-/,
  );

  // A reload runs v2 at the same URL.
  await page.reload();
  assert.equal(page.url(), landed);
  assert.equal(await page.textContent("#version"), "v2");
  await page.waitForTimeout(600);
  assert.equal(await page.isHidden("#update"), true);
  assert.equal(await page.textContent("#error"), "");
  console.log(`updated in place: ${landed}`);
}

const folder = await Deno.makeTempDir({ prefix: "update-journey-" });
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: CHROMIUM_FLAGS,
});
try {
  for (const podDomain of [null, "localhost"]) {
    const context = await browser.newContext();
    try {
      await journey(await context.newPage(), folder, podDomain);
    } finally {
      await context.close();
    }
  }
  console.log("journey ok");
} finally {
  await browser.close();
  await Deno.remove(folder, { recursive: true });
}
