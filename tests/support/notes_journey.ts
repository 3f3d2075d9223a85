// The notes example (examples/notes/, Yjs with the real y-webrtc provider)
// built as a signed pod, served on its own origin (`podDomain: localhost`),
// in Debian's Chromium (run by tests/e2e/compat_test.ts, inside a
// loopback-only network namespace when it can): two visitors, each in a
// browser context of its own, type into one text and see each other's
// words; each sees the other listed, by the name chosen, marked as typing
// while they type; the name is kept in the pod origin's storage. No CSP
// violation, no uncaught error.
// Usage: deno run -A tests/support/notes_journey.ts POD.html [SCREENSHOT.png]
import assert from "node:assert/strict";
import { type Browser, chromium, type Page } from "playwright-core";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { startServer, upload } from "./helpers.ts";

const [podPath, screenshot] = Deno.args;
const WAIT = { timeout: 30_000 };
const errors: string[] = [];

async function visit(browser: Browser, url: string): Promise<Page> {
  const context = await browser.newContext({
    viewport: { width: 760, height: 480 },
  });
  // Without a media permission Chromium offers no loopback ICE candidate.
  await context.grantPermissions(["camera", "microphone"]);
  const page = await context.newPage();
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) {
      errors.push(message.text());
    }
  });
  await page.goto(url);
  await page.waitForSelector("#people li[data-me='true']", WAIT);
  return page;
}

await using broker = await startServer({ podDomain: "localhost" });
const uploaded = await upload(broker.url, await Deno.readFile(podPath!));
assert.equal(uploaded.status, 201, await uploaded.clone().text());
const { podUrl } = await uploaded.json();
assert.match(podUrl, /^http:\/\/[a-z2-7]{20}\.localhost:\d+\/$/);
const url = `${podUrl}#team-${crypto.randomUUID().slice(0, 8)}`;

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: CHROMIUM_FLAGS,
});
try {
  const a = await visit(browser, url);
  const b = await visit(browser, url);
  await a.fill("#name", "Alice");
  await b.fill("#name", "Bob");
  for (const [page, other] of [[a, "Bob"], [b, "Alice"]] as const) {
    await page.waitForSelector(`#people li:text-is("${other}")`, WAIT);
    await page.waitForSelector("#status[data-state='connected']", WAIT);
  }

  // Alice types; Bob sees her words, and sees her typing meanwhile.
  await a.click("#notes");
  await a.keyboard.type("Shopping: bread, ", { delay: 40 });
  await b.waitForSelector(
    "#people li[data-editing='true']:text-is('Alice')",
    WAIT,
  );
  await b.waitForFunction(
    () =>
      (document.getElementById("notes") as HTMLTextAreaElement).value
        .includes("bread"),
    undefined,
    WAIT,
  );
  // Bob adds to the end; both have one text.
  await b.click("#notes");
  await b.keyboard.press("End");
  await b.keyboard.type("milk.", { delay: 20 });
  const both = "Shopping: bread, milk.";
  for (const page of [a, b]) {
    await page.waitForFunction(
      (text) =>
        (document.getElementById("notes") as HTMLTextAreaElement).value ===
          text,
      both,
      WAIT,
    );
  }
  // Typing stops: the mark goes.
  await b.waitForSelector(
    "#people li[data-editing='false']:text-is('Alice')",
    WAIT,
  );
  if (screenshot) await b.screenshot({ path: screenshot });

  // On its own origin the pod has storage: Alice's name stays hers.
  await a.reload();
  await a.waitForSelector("#people li[data-me='true']", WAIT);
  assert.equal(await a.inputValue("#name"), "Alice");
  assert.deepEqual(errors, [], "no uncaught error and no CSP violation");
  console.log("journey ok");
} finally {
  await browser.close();
}
