// A clean console, run by tests/e2e/console_test.ts inside a network
// namespace: the tutorial's five-minute pod (its files taken from
// docs/authors/tutorial.md), the chat pod and the file drop (built from
// examples/ as `pod-broker build` does) and the hand-written
// examples/chat/chat.html load in two tabs each, on a broker's host and on
// a pod's own origin, meet each other and talk; no page logs a warning or
// an error, and none has an uncaught error. First, the built five-minute
// pod opened from disk (file:) says, in the page, how to run it.
// Prints each message as "problem: ..." and exits non-zero when there is
// one; prints "journey ok" at the end.
// Usage: deno run -A tests/support/console_journey.ts chromium|firefox
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import { buildPod } from "../../src/bundler/mod.ts";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { blocksOf } from "./doc_blocks.ts";
import { launchFirefox } from "./firefox.ts";
import { newSeed, signedPod, startServer, upload } from "./helpers.ts";

const WAIT = 30_000;
const TUTORIAL = "docs/authors/tutorial.md";
const ROOT = new URL("../../", import.meta.url);

/** One tab, driven the same way in both browsers. */
interface Tab {
  /** Waits until an element matching `selector` has text matching `pattern`. */
  wait(selector: string, pattern?: string): Promise<void>;
  /** The element's text. */
  text(selector: string): Promise<string>;
  /** Types `text` into the field and presses Enter. */
  say(selector: string, text: string): Promise<void>;
}

/** A browser that opens tabs, each logging its problems as `what: ...`. */
interface Driver {
  open(url: string, what: string): Promise<Tab>;
  closeTabs(): Promise<void>;
  close(): Promise<void>;
}

/** In the page: whether an element matches `selector` and `pattern`. */
function matches([selector, pattern]: string[]): boolean {
  return [...document.querySelectorAll(selector!)].some((node) =>
    new RegExp(pattern!).test(node.textContent ?? "")
  );
}

/** Every warning, error and uncaught error of every page. */
const problems: string[] = [];

/**
 * Notes `what`'s console warnings and errors in `problems`; `warning` is the
 * browser's name for a warning's type (Chromium's "warning", Firefox's
 * "warn").
 */
function noteConsole(what: string, warning: string) {
  return (message: { type(): string; text(): string }) => {
    if ([warning, "error"].includes(message.type())) {
      problems.push(`${what}: ${message.type()}: ${message.text()}`);
    }
  };
}

async function chromiumDriver(): Promise<Driver> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: CHROMIUM_FLAGS,
  });
  const contexts: Awaited<ReturnType<typeof browser.newContext>>[] = [];
  return {
    async open(url, what) {
      const context = await browser.newContext();
      contexts.push(context);
      // Without a media permission Chromium offers no loopback candidate.
      await context.grantPermissions(["camera", "microphone"]);
      const page = await context.newPage();
      page.on("console", noteConsole(what, "warning"));
      page.on("pageerror", (error) => problems.push(`${what}: ${error}`));
      await page.goto(url);
      return {
        wait: (selector, pattern = "") =>
          page.waitForFunction(matches, [selector, pattern], { timeout: WAIT })
            .then(() => {}),
        text: async (selector) => (await page.textContent(selector)) ?? "",
        say: async (selector, text) => {
          await page.fill(selector, text);
          await page.press(selector, "Enter");
        },
      };
    },
    async closeTabs() {
      for (const context of contexts.splice(0)) await context.close();
    },
    close: () => browser.close(),
  };
}

async function firefoxDriver(): Promise<Driver> {
  const browser = await launchFirefox();
  return {
    async open(url, what) {
      const page = await browser.newPage();
      page.on("console", noteConsole(what, "warn"));
      page.on("pageerror", (error) => problems.push(`${what}: ${error}`));
      await page.goto(url);
      return {
        wait: (selector, pattern = "") =>
          page.waitForFunction(matches, { timeout: WAIT }, [selector, pattern])
            .then(() => {}),
        text: (selector) =>
          page.$eval(selector, (node) => node.textContent ?? ""),
        say: async (selector, text) => {
          await page.type(selector, text);
          await page.keyboard.press("Enter");
        },
      };
    },
    async closeTabs() {
      for (const page of await browser.pages()) {
        if (page.url() !== "about:blank") await page.close();
      }
    },
    close: () => browser.close(),
  };
}

/** The tutorial's pod folder, written from the page's file blocks. */
async function tutorialFolder(dir: string): Promise<string> {
  const text = await Deno.readTextFile(new URL(TUTORIAL, ROOT));
  for (const block of blocksOf(TUTORIAL, text)) {
    const name = /^file (\S+)$/.exec(block.marker ?? "")?.[1];
    if (name) await Deno.writeTextFile(join(dir, name), block.text);
  }
  const logo = /^echo (\S+) \| base64 -d > logo\.png$/m.exec(text)?.[1];
  assert.ok(logo, "the tutorial's logo.png command");
  await Deno.writeFile(
    join(dir, "logo.png"),
    Uint8Array.from(atob(logo), (char) => char.charCodeAt(0)),
  );
  return join(dir, "index.html");
}

/** A page built from `entry` and signed, as `pod-broker build --key` makes it. */
async function built(entry: string, name: string): Promise<Uint8Array> {
  const { html, warnings } = await buildPod(entry, {
    seed: await newSeed(),
    name,
  });
  assert.deepEqual(warnings, [], `${entry}: ${warnings.join("\n")}`);
  return html;
}

/** How one pod is opened, shows its peer, and talks. */
interface PodCase {
  name: string;
  html: Uint8Array;
  /** Ready: what each tab shows once it is connected (selector, pattern). */
  ready: [string, string];
  /** What shows the other peer (`ID` stands for its id, in both). */
  peer: [string, string];
  /** The field to type into, and where the other tab shows what came. */
  say?: { input: string; log: string };
}

const CHAT: Pick<PodCase, "ready" | "peer"> = {
  ready: ['#status[data-state="connected"]', ""],
  peer: ['#peers li[data-peer-id="ID"][data-state="open"]', ""],
};

async function visit(driver: Driver, url: string, pod: PodCase, where: string) {
  const what = `${pod.name} (${where})`;
  const room = `${url}#console-${crypto.randomUUID().slice(0, 8)}`;
  const a = await driver.open(room, `${what}, tab 1`);
  const b = await driver.open(room, `${what}, tab 2`);
  for (const tab of [a, b]) await tab.wait(...pod.ready);
  const [idA, idB] = [await a.text("#me"), await b.text("#me")];
  assert.match(idA, /^[A-Za-z0-9]{16}$/, what);
  const peer = (id: string) =>
    pod.peer.map((part) => part.replace("ID", id)) as [string, string];
  await a.wait(...peer(idB));
  await b.wait(...peer(idA));
  if (pod.say) {
    await a.say(pod.say.input, "hello from tab 1");
    await b.wait(pod.say.log, "hello from tab 1");
  }
  // A moment for late messages (a closed socket, a late candidate).
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  await driver.closeTabs();
}

const browser = Deno.args[0];
assert.ok(browser === "chromium" || browser === "firefox", "chromium|firefox");
const dir = await Deno.makeTempDir({ prefix: "pod-console-" });
const driver = browser === "chromium"
  ? await chromiumDriver()
  : await firefoxDriver();
try {
  const tutorial = await built(await tutorialFolder(dir), "Hello room");
  const examples = new URL("examples/", ROOT);
  const pods: PodCase[] = [
    {
      name: "the five-minute pod",
      html: tutorial,
      ready: ["#me", "^[A-Za-z0-9]{16}$"],
      peer: ["#peers", "ID"],
      say: { input: "#text", log: "#log li" },
    },
    {
      name: "chat",
      html: await built(new URL("chat/index.html", examples).pathname, "Chat"),
      ...CHAT,
      say: { input: "#input", log: "#log .msg" },
    },
    {
      name: "chat.html",
      html: await signedPod(
        await Deno.readFile(new URL("chat/chat.html", examples)),
      ),
      ...CHAT,
      say: { input: "#input", log: "#log .msg" },
    },
    {
      name: "file drop",
      html: await built(
        new URL("file-drop/index.html", examples).pathname,
        "File drop",
      ),
      ...CHAT,
    },
  ];
  // Opened from disk: the client says, in the page, how to run it; the one
  // error is that message (joinRoom rejected).
  const file = join(dir, "hello.pod.html");
  await Deno.writeFile(file, tutorial);
  const tab = await driver.open(pathToFileURL(file).href, "file:");
  await tab.wait("body", "pod-broker dev");
  assert.match(
    await tab.text("body"),
    /^\s*Cannot join from a file: run `pod-broker dev` in the pod's folder/,
  );
  for (let i = 0; i < 50 && problems.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.ok(problems.length > 0, "the rejection is reported");
  for (const problem of problems) assert.match(problem, /pod-broker dev/);
  await driver.closeTabs();
  problems.length = 0;

  for (const podDomain of [undefined, "localhost"]) {
    await using server = await startServer(podDomain ? { podDomain } : {});
    for (const pod of pods) {
      const uploaded = await upload(server.url, pod.html as BodyInit);
      assert.equal(uploaded.status, 201, await uploaded.clone().text());
      const created = await uploaded.json();
      await visit(
        driver,
        podDomain ? created.podUrl : created.url,
        pod,
        podDomain ? "pod's own origin" : "broker's host",
      );
    }
  }
  for (const problem of problems) console.log(`problem: ${problem}`);
  assert.deepEqual(problems, [], `console messages:\n${problems.join("\n")}`);

  console.log("journey ok");
} finally {
  await driver.close();
  await Deno.remove(dir, { recursive: true });
}
