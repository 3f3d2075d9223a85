// A new author's loop in Debian's Chromium, run by tests/e2e/dev_test.ts
// (inside a loopback-only network namespace when it can): `pod-broker init`
// makes a folder, `pod-broker dev` serves it, two tabs of the printed URL
// are two peers of one room and talk; an edit of index.html shows in both
// open tabs (they reload), a build error shows in the page and in the
// terminal, and the fix brings the page back, still one room. No CSP
// violation and no uncaught error on the way. Prints the time from the
// empty folder to two tabs talking. Exits non-zero with the failed
// assertion; prints "journey ok" at the end.
// Usage: deno run -A tests/support/dev_journey.ts
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { chromium, type Page } from "playwright-core";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { runCli, startDev } from "./dev_process.ts";

const WAIT = { timeout: 20_000 };
const T0 = performance.now();
const step = (what: string) =>
  console.error(`[${Math.round(performance.now() - T0)} ms] ${what}`);
const problems: string[] = [];

/** The tab's peer id, once the client has joined. */
async function peerIdOf(page: Page): Promise<string> {
  await page.waitForFunction(
    () => /^[A-Za-z0-9]{16}$/.test(document.getElementById("me")!.textContent!),
    undefined,
    WAIT,
  );
  return (await page.textContent("#me"))!;
}

/** Waits until `page` lists `peer` among its peers. */
async function sees(page: Page, peer: string): Promise<void> {
  await page.waitForFunction(
    (id) => document.getElementById("peers")!.textContent!.includes(id),
    peer,
    WAIT,
  ).catch(async (error) => {
    throw new Error(
      `${await page.textContent("#me")} never saw ${peer}: peers ${await page
        .textContent("#peers")}`,
      { cause: error },
    );
  });
}

/** Sends `text` from `from`; waits until `to` shows it. */
async function talk(from: Page, to: Page, text: string): Promise<void> {
  const sender = await peerIdOf(from);
  await from.fill("#text", text);
  await from.press("#text", "Enter");
  await to.waitForFunction(
    (line) =>
      [...document.querySelectorAll("#log li")].some((item) =>
        item.textContent === line
      ),
    `${sender}: ${text}`,
    WAIT,
  );
}

/** Waits until the page's `<h1>` reads `text`. */
async function heading(page: Page, text: string): Promise<void> {
  await page.waitForFunction(
    (want) => document.querySelector("h1")?.textContent === want,
    text,
    WAIT,
  );
}

const temp = await Deno.makeTempDir({ prefix: "pod-dev-journey-" });
const env = { XDG_CONFIG_HOME: join(temp, "config") };
const dir = join(temp, "hello-room");
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: CHROMIUM_FLAGS,
});
try {
  const started = performance.now();
  const made = await runCli(["init", dir], env);
  assert.equal(made.code, 0, made.stderr);
  const initialized = performance.now();
  await using dev = await startDev([dir], env);
  const serving = performance.now();
  const context = await browser.newContext();
  // Without a media permission Chromium offers no loopback ICE candidate
  // (the namespace has nothing but loopback).
  await context.grantPermissions(["camera", "microphone"]);
  const tabs = [await context.newPage(), await context.newPage()] as const;
  for (const tab of tabs) {
    tab.on("pageerror", (error) => problems.push(error.message));
    tab.on("console", (message) => {
      const text = message.text();
      if (/Content Security Policy|Refused to/i.test(text)) problems.push(text);
    });
  }
  const [a, b] = tabs;
  step("dev serving");
  await a.goto(dev.url);
  await b.goto(dev.url);
  step("tabs loaded");
  const [idA, idB] = [await peerIdOf(a), await peerIdOf(b)];
  step("tabs joined");
  await sees(a, idB);
  await sees(b, idA);
  step("tabs linked");
  await talk(a, b, "hello from a");
  step("tabs talked");
  const talking = performance.now();

  // An edit shows in both open tabs: they reload.
  const index = join(dir, "index.html");
  const html = await readFile(index, "utf8");
  assert.match(html, /<h1>hello-room<\/h1>/);
  const edited = performance.now();
  await writeFile(index, html.replace("<h1>hello-room", "<h1>Edited live"));
  await heading(a, "Edited live");
  const shown = performance.now();
  await heading(b, "Edited live");
  step("both tabs reloaded");
  // Still two peers of one room after the reload.
  await sees(a, await peerIdOf(b));
  await talk(b, a, "hello again from b");

  // A build error: in the page and in the terminal; then the fix.
  const appFile = join(dir, "app.ts");
  const app = await readFile(appFile, "utf8");
  await writeFile(appFile, `import "./missing.ts";\n${app}`);
  await a.waitForFunction(
    () =>
      /app\.ts:1: Could not resolve "\.\/missing\.ts"/.test(
        document.getElementById("pod-broker-dev-error")?.textContent ?? "",
      ),
    undefined,
    WAIT,
  );
  assert.match(dev.stderr(), /error: app\.ts:1: Could not resolve/);
  await writeFile(appFile, app);
  await heading(a, "Edited live");
  await heading(b, "Edited live");
  await sees(a, await peerIdOf(b));
  await talk(a, b, "fixed");

  assert.deepEqual(problems, []);
  assert.equal(await dev.stop(), 0);
  const ms = (from: number, to: number) => Math.round(to - from);
  console.log(
    `timing: init ${ms(started, initialized)} ms, dev serving ${
      ms(initialized, serving)
    } ms, two tabs open and talking ${ms(serving, talking)} ms: ${
      ms(started, talking)
    } ms from an empty folder to two tabs talking; an edit shown in the open tab ${
      ms(edited, shown)
    } ms after the save`,
  );
  console.log("journey ok");
} finally {
  await browser.close();
  await Deno.remove(temp, { recursive: true });
}
