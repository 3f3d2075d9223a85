// What a pod may do, in a real browser (Debian's Chromium or Firefox ESR),
// run by tests/e2e/capabilities_test.ts inside a network namespace: the
// probe pod (tests/testdata/capabilities_probe.html) tries each row of the
// table of docs/authors/capabilities.md on a broker's host (an opaque
// origin), on a pod's own origin (`podDomain: "localhost"`), and there
// again with the pod declaring every feature it may ask for
// (`<meta name="pod-permissions">`; the broker's host is tried with the
// declaration too, which must change nothing there); this journey clicks
// for the clipboard, full screen, a screen share and the popups, downloads,
// sends a form and frames the pod, then checks every outcome against the
// table's cell for this browser and host
// (tests/support/capabilities_table.ts reads it).
// Another origin that answers (an image, text with CORS, a WebSocket, a
// page) runs beside the broker, so what is refused is refused by the
// policy, not for want of a server.
// Exits non-zero with every mismatch; prints "journey ok" at the end.
// Usage: deno run -A tests/support/capabilities_journey.ts chromium|firefox
import assert from "node:assert/strict";
import puppeteer, { type Page as FirefoxPage } from "puppeteer-core";
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import {
  CAPABILITIES_PAGE,
  capabilityRows,
  type Host,
  HOSTS,
  type Verdict,
} from "./capabilities_table.ts";
import { FIREFOX } from "./firefox.ts";
import { signedPod, startServer, upload } from "./helpers.ts";
import { POD_PERMISSIONS } from "../../src/serving/permissions.ts";

const WAIT = 20_000;
const PNG = Uint8Array.from(
  atob(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  ),
  (char) => char.charCodeAt(0),
);

/** One tab, driven the same way in both browsers. */
interface Tab {
  /** Waits until the title matches; returns it. */
  title(pattern: RegExp): Promise<string>;
  click(selector: string): Promise<void>;
  /** The probe's outcomes (`window.__out`). */
  out(): Promise<Record<string, string>>;
  /** Clicks the download link; whether a file with the pod's bytes came. */
  download(): Promise<boolean>;
  url(): string;
}

/** A browser: opens tabs, closes every tab (and popup) of one host. */
interface Driver {
  open(url: string): Promise<Tab>;
  closeTabs(): Promise<void>;
  close(): Promise<void>;
}

async function chromiumDriver(): Promise<Driver> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    // A camera and a microphone, as a visitor has, and a visitor who says
    // yes to each camera, microphone or screen prompt: headless Chromium
    // would refuse them without one, as it refuses what the policy denies.
    args: [
      ...CHROMIUM_FLAGS,
      "--use-fake-device-for-media-stream",
      "--use-fake-ui-for-media-stream",
    ],
  });
  let context = await browser.newContext({ acceptDownloads: true });
  return {
    async open(url) {
      const page = await context.newPage();
      page.on("dialog", (dialog) => dialog.accept());
      await page.goto(url);
      return {
        title: async (pattern) => {
          await page.waitForFunction(
            (source) => new RegExp(source).test(document.title),
            pattern.source,
            { timeout: WAIT },
          );
          return await page.title();
        },
        // A mouse click does not wait for a navigation (a form sent).
        click: async (selector) => {
          const box = (await page.locator(selector).boundingBox())!;
          await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
        },
        out: () =>
          page.evaluate(() =>
            (globalThis as unknown as { __out: Record<string, string> }).__out
          ),
        download: async () => {
          const [download] = await Promise.all([
            page.waitForEvent("download", { timeout: 5_000 }).catch(() => null),
            page.click("#dl"),
          ]);
          const path = await download?.path();
          return path !== undefined &&
            await Deno.readTextFile(path) === "probe";
        },
        url: () => page.url(),
      };
    },
    async closeTabs() {
      await context.close();
      context = await browser.newContext({ acceptDownloads: true });
    },
    close: () => browser.close(),
  };
}

/**
 * Firefox with its defaults but where downloads go (no permission is
 * granted ahead: a prompt stays open, which the probe reports as "asks").
 */
async function firefoxDriver(): Promise<Driver> {
  const downloads = await Deno.makeTempDir({ prefix: "pod-probe-" });
  const browser = await puppeteer.launch({
    browser: "firefox",
    executablePath: FIREFOX,
    headless: true,
    extraPrefsFirefox: {
      "browser.download.dir": downloads,
      "browser.download.folderList": 2,
      "browser.download.useDownloadDir": true,
      "browser.download.always_ask_before_handling_new_types": false,
      // A microphone, as a visitor has: asked for, not granted ahead.
      "media.navigator.streams.fake": true,
    },
  });
  const tabs: FirefoxPage[] = [];
  return {
    async open(url) {
      const page = await browser.newPage();
      tabs.push(page);
      page.on("dialog", (dialog) => dialog.accept());
      await page.goto(url);
      return {
        title: async (pattern) => {
          await page.waitForFunction(
            (source: string) => new RegExp(source).test(document.title),
            { timeout: WAIT },
            pattern.source,
          );
          return await page.title();
        },
        click: (selector) => page.click(selector),
        out: () =>
          page.evaluate(() =>
            (globalThis as unknown as { __out: Record<string, string> }).__out
          ),
        download: async () => {
          await page.click("#dl");
          const file = `${downloads}/probe.txt`;
          for (let i = 0; i < 50; i++) {
            const text = await Deno.readTextFile(file).catch(() => "");
            if (text === "probe") {
              await Deno.remove(file);
              return true;
            }
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
          return false;
        },
        url: () => page.url(),
      };
    },
    async closeTabs() {
      for (const page of await browser.pages()) {
        if (page.url() !== "about:blank" || tabs.includes(page)) {
          await page.close();
        }
      }
      tabs.length = 0;
    },
    async close() {
      await browser.close();
      await Deno.remove(downloads, { recursive: true });
    },
  };
}

/**
 * Another origin that answers: text with CORS, an image, a WebSocket, a
 * page that tells its parent it ran, the framing page, and the two targets
 * whose requests show that a popup opened or a form was sent.
 */
function otherOrigin() {
  const hits = new Set<string>();
  const html = (body: string) =>
    new Response(`<!doctype html><meta charset="utf-8">${body}`, {
      headers: { "Content-Type": "text/html; charset=utf-8" },
    });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      const url = new URL(request.url);
      switch (url.pathname) {
        case "/text":
          return new Response("hi", {
            headers: { "Access-Control-Allow-Origin": "*" },
          });
        case "/x.png":
          return new Response(PNG, {
            headers: { "Content-Type": "image/png" },
          });
        case "/ws": {
          const { response } = Deno.upgradeWebSocket(request);
          return response;
        }
        case "/page":
          return html(
            `<script>parent.postMessage("page framed", "*")</script>`,
          );
        case "/opened":
        case "/submitted":
          hits.add(`${url.pathname}?${url.searchParams.get("by") ?? ""}`);
          return html(`<title>${url.pathname}</title>`);
        case "/framer":
          return html(
            `<title></title><script>addEventListener("message", (e) => { if (e.data === "pod framed") document.title = "framed"; });` +
              `setTimeout(() => { document.title ||= "not framed"; }, 3000);</script>` +
              `<iframe src="${
                url.searchParams.get("src")!.replace(/"/g, "")
              }"></iframe>`,
          );
        default:
          return new Response("not found", { status: 404 });
      }
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    hits,
    close: () => server.shutdown(),
  };
}

/** Waits up to 5 s for `hit` to reach the other origin. */
async function arrived(hits: Set<string>, hit: string): Promise<boolean> {
  for (let i = 0; i < 50 && !hits.has(hit); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return hits.has(hit);
}

/** Every outcome on one host: the probe's, then the journey's own. */
async function probeHost(
  driver: Driver,
  podUrl: string,
  other: ReturnType<typeof otherOrigin>,
): Promise<Record<string, string>> {
  const tab = await driver.open(`${podUrl}#other=${other.url}`);
  await tab.title(/^CLICK$/);
  await tab.click("#copy");
  await tab.click("#full");
  await tab.click("#share");
  await tab.click("#open");
  await tab.click("#notify");
  await tab.title(/^DONE$/);
  const outcomes = await tab.out();
  const said = (yes: boolean, how: string) => `${yes ? "yes" : "no"} ${how}`;
  await tab.click("#blank");
  outcomes.targetBlank = said(
    await arrived(other.hits, "/opened?link"),
    "a click on the link: the other origin got the request",
  );
  outcomes.download = said(await tab.download(), "the file came");
  await tab.click("#send");
  const sent = await arrived(other.hits, "/submitted?");
  outcomes.formSend = said(sent, `the page is at ${tab.url()}`);
  const framer = await driver.open(
    `${other.url}/framer?src=${encodeURIComponent(podUrl)}`,
  );
  outcomes.framed = said(
    await framer.title(/framed/) === "framed",
    "another origin's <iframe>",
  );
  other.hits.clear();
  await driver.closeTabs();
  return outcomes;
}

/**
 * The checks that reach a browser's prompt when nothing refuses them first.
 * Chromium's fake prompt says yes at once, so there a granted one is an
 * "asks": a visitor would have been asked. Headless Firefox has no screen:
 * a screen share that passed every check ends in `NotFoundError` where a
 * desktop Firefox shows its picker, so there that is an "asks".
 */
const PROMPTED: readonly string[] = ["getUserMedia", "getDisplayMedia"];

/** The outcomes, with the prompts the browser reached as "asks". */
function asAsked(
  browser: "chromium" | "firefox",
  outcomes: Record<string, string>,
): Record<string, string> {
  const asked = { ...outcomes };
  const reached = browser === "chromium"
    ? (name: string, seen: string) =>
      PROMPTED.includes(name) && seen.startsWith("yes ")
    : (name: string, seen: string) =>
      name === "getDisplayMedia" && seen.startsWith("no NotFoundError:");
  for (const [name, seen] of Object.entries(outcomes)) {
    if (reached(name, seen)) {
      asked[name] = `asks: the prompt was reached (${seen})`;
    }
  }
  return asked;
}

/** The mismatches between the table and what the pod saw on one host. */
function compare(
  host: Host,
  browser: "chromium" | "firefox",
  outcomes: Record<string, string>,
): string[] {
  const rows = capabilityRows(
    Deno.readTextFileSync(
      new URL(`../../${CAPABILITIES_PAGE}`, import.meta.url),
    ),
  );
  const problems: string[] = [];
  const named = new Set<string>();
  for (const row of rows) {
    for (const probe of row.probes) {
      named.add(probe);
      const want = row.expected[host][browser];
      const seen = outcomes[probe] ?? "(no outcome)";
      const verdict = /^(yes|no|asks)\b/.exec(seen)?.[1] as Verdict | undefined;
      if (verdict !== want) {
        problems.push(
          `${browser}, ${host}, ${row.what} (${probe}): the table says ${want}, the pod saw "${seen}"`,
        );
      }
    }
  }
  for (const probe of Object.keys(outcomes)) {
    if (probe !== "violations" && !named.has(probe)) {
      problems.push(`${probe}: no row of the table names this probe`);
    }
  }
  return problems;
}

const browser = Deno.args[0];
assert.ok(browser === "chromium" || browser === "firefox", "chromium|firefox");
const html = await Deno.readTextFile(
  new URL("../testdata/capabilities_probe.html", import.meta.url),
);
const declaration = `<meta name="pod-permissions" content="${
  POD_PERMISSIONS.join(" ")
}">`;
/** The probe pod as each column serves it. */
const pods: Record<Host, Uint8Array> = {
  "broker's host": await signedPod(
    html.replace("<title>", `${declaration}<title>`),
  ),
  "pod's own origin": await signedPod(html),
  "pod's own origin, declared": await signedPod(
    html.replace("<title>", `${declaration}<title>`),
  ),
};
const other = otherOrigin();
const driver = browser === "chromium"
  ? await chromiumDriver()
  : await firefoxDriver();
const problems: string[] = [];
try {
  for (const host of HOSTS) {
    const ownOrigin = host !== "broker's host";
    await using server = await startServer(
      ownOrigin ? { podDomain: "localhost" } : {},
    );
    const uploaded = await upload(server.url, pods[host] as BodyInit);
    assert.equal(uploaded.status, 201);
    const created = await uploaded.json();
    const url = ownOrigin ? created.podUrl : created.url;
    const outcomes = asAsked(browser, await probeHost(driver, url, other));
    console.log(`${browser}, ${host}:`);
    for (const [name, outcome] of Object.entries(outcomes)) {
      console.log(`  ${name}: ${outcome.replaceAll("\n", "\n    ")}`);
    }
    problems.push(...compare(host, browser, outcomes));
  }
} finally {
  await driver.close();
  await other.close();
}
assert.deepEqual(
  problems,
  [],
  `the table and the browser differ:\n${problems.join("\n")}`,
);
console.log("journey ok");
