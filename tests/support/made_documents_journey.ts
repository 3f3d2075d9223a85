// What the documents a pod makes at its own origin can reach, in a real
// browser (Debian's Chromium or Firefox ESR), run by
// tests/e2e/made_documents_test.ts inside a network namespace. The probe pod
// (tests/testdata/made_documents_probe.html) asks for the camera and the
// microphone in its own page, in an about:blank popup, in a popup of a blob:
// it made, and in its own tab navigated to such a blob:. Permissions-Policy
// binds only the pod's own page (and Firefox reads none), so with
// `podDomain` alone a pod that declares nothing gets both through the
// others; with `podHeaderOptions.storage: "granted"` a pod granted nothing
// runs at an opaque origin, where none of the four gets either, while a pod
// granted them keeps them and its storage. The browser says yes to every
// prompt (fake devices), so "yes" means a visitor would have been asked.
// Exits non-zero with every mismatch; prints "journey ok" at the end.
// Usage: deno run -A tests/support/made_documents_journey.ts chromium|firefox
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { launchFirefox } from "./firefox.ts";
import { signedPod, startServer, upload } from "./helpers.ts";
import type { SignalServerOptions } from "../../src/core.ts";

const WAIT = 20_000;
/** What the probe says when a document got both a camera and a microphone. */
const YES = "yes tracks: audio and video";

/** The probe's outcomes: the pod's own page, its storage, its socket, and the three pages it made. */
type Outcomes = Record<
  "own" | "storage" | "signal" | "blankPopup" | "blobPopup" | "selfBlob",
  string
>;

/** A browser that runs the probe in a fresh tab and closes what it opened. */
interface Driver {
  probe(url: string): Promise<Outcomes>;
  close(): Promise<void>;
}

/** The outcomes of the click on #go, then of the click on #nav in another tab. */
async function probeWith(
  open: (url: string) => Promise<{
    click(selector: string): Promise<void>;
    title(pattern: RegExp): Promise<string>;
    out(): Promise<Record<string, string>>;
  }>,
  url: string,
): Promise<Outcomes> {
  const first = await open(url);
  await first.title(/^READY$/);
  await first.click("#go");
  await first.title(/^DONE$/);
  const out = await first.out();
  const second = await open(url);
  await second.title(/^READY$/);
  await second.click("#nav");
  const made = await second.title(/^MADE /);
  return {
    own: out.own!,
    storage: out.storage!,
    signal: out.signal!,
    blankPopup: out.blankPopup!,
    blobPopup: out.blobPopup!,
    selfBlob: made.slice("MADE ".length),
  };
}

async function chromiumDriver(): Promise<Driver> {
  // Fake devices, and a visitor who says yes to every prompt.
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      ...CHROMIUM_FLAGS,
      "--use-fake-device-for-media-stream",
      "--use-fake-ui-for-media-stream",
    ],
  });
  return {
    async probe(url) {
      const context = await browser.newContext();
      try {
        return await probeWith(async (to) => {
          const page = await context.newPage();
          await page.goto(to);
          return {
            click: (selector) => page.click(selector),
            title: async (pattern) => {
              await page.waitForFunction(
                (source) => new RegExp(source).test(document.title),
                pattern.source,
                { timeout: WAIT },
              );
              return await page.title();
            },
            out: () =>
              page.evaluate(() =>
                (globalThis as unknown as { __out: Record<string, string> })
                  .__out
              ),
          };
        }, url);
      } finally {
        await context.close();
      }
    },
    close: () => browser.close(),
  };
}

async function firefoxDriver(): Promise<Driver> {
  // Fake devices, granted without a prompt (launchFirefox's preferences).
  const browser = await launchFirefox();
  return {
    async probe(url) {
      try {
        return await probeWith(async (to) => {
          const page = await browser.newPage();
          await page.goto(to);
          return {
            click: (selector) => page.click(selector),
            title: async (pattern) => {
              await page.waitForFunction(
                (source: string) => new RegExp(source).test(document.title),
                { timeout: WAIT },
                pattern.source,
              );
              return await page.title();
            },
            out: () =>
              page.evaluate(() =>
                (globalThis as unknown as { __out: Record<string, string> })
                  .__out
              ),
          };
        }, url);
      } finally {
        for (const page of await browser.pages()) {
          if (page.url() !== "about:blank") await page.close();
        }
      }
    },
    close: () => browser.close(),
  };
}

/**
 * What each outcome should be: the pod's own page, the three pages it made,
 * its storage; its socket to `/signal` always opens.
 */
function expect(
  own: boolean,
  rest: boolean,
  storage: boolean,
): Record<keyof Outcomes, boolean> {
  return {
    own,
    storage,
    signal: true,
    blankPopup: rest,
    blobPopup: rest,
    selfBlob: rest,
  };
}

/**
 * "yes" for both tracks (for storage and the socket: any "yes"), "no" for
 * a refusal, "neither" for anything else (a missing outcome).
 */
function verdict(name: keyof Outcomes, seen: string): "yes" | "no" | "neither" {
  if (seen.startsWith("no ")) return "no";
  const plain = name === "storage" || name === "signal";
  return (plain ? seen.startsWith("yes ") : seen === YES) ? "yes" : "neither";
}

const browserName = Deno.args[0];
assert.ok(
  browserName === "chromium" || browserName === "firefox",
  "chromium|firefox",
);
const html = await Deno.readTextFile(
  new URL("../testdata/made_documents_probe.html", import.meta.url),
);
const undeclared = await signedPod(html);
const declared = await signedPod(
  html.replace(
    "<title>",
    '<meta name="pod-permissions" content="camera microphone"><title>',
  ),
);
/** Each case: the broker's options, the pod, and what each browser lets it reach. */
const cases: {
  what: string;
  options: Partial<SignalServerOptions>;
  pod: Uint8Array;
  want: Record<"chromium" | "firefox", Record<keyof Outcomes, boolean>>;
}[] = [
  {
    what: "storage all (the default), a pod that declares nothing",
    options: { podDomain: "localhost" },
    pod: undeclared,
    // Chromium refuses the pod's own page only; Firefox reads no
    // Permissions-Policy at all.
    want: {
      chromium: expect(false, true, true),
      firefox: expect(true, true, true),
    },
  },
  {
    what: "storage granted, a pod that declares nothing",
    options: {
      podDomain: "localhost",
      podHeaderOptions: { storage: "granted" },
    },
    pod: undeclared,
    want: {
      chromium: expect(false, false, false),
      firefox: expect(false, false, false),
    },
  },
  {
    what: "storage granted, a pod granted the camera",
    options: {
      podDomain: "localhost",
      podHeaderOptions: { storage: "granted" },
    },
    pod: declared,
    want: {
      chromium: expect(true, true, true),
      firefox: expect(true, true, true),
    },
  },
  {
    what:
      "storage granted and pod permissions none, a pod that declares the camera",
    options: {
      podDomain: "localhost",
      podPermissions: [],
      podHeaderOptions: { storage: "granted" },
    },
    pod: declared,
    want: {
      chromium: expect(false, false, false),
      firefox: expect(false, false, false),
    },
  },
];

const driver = browserName === "chromium"
  ? await chromiumDriver()
  : await firefoxDriver();
const problems: string[] = [];
try {
  for (const { what, options, pod, want } of cases) {
    await using server = await startServer(options);
    const uploaded = await upload(server.url, pod as BodyInit);
    assert.equal(uploaded.status, 201);
    const { podUrl } = await uploaded.json();
    const outcomes = await driver.probe(podUrl);
    console.log(`${browserName}, ${what}:`);
    for (const [name, yes] of Object.entries(want[browserName])) {
      const seen = outcomes[name as keyof Outcomes];
      console.log(`  ${name}: ${seen}`);
      if (verdict(name as keyof Outcomes, seen) !== (yes ? "yes" : "no")) {
        problems.push(
          `${browserName}, ${what}, ${name}: wanted ${
            yes ? "yes" : "no"
          }, the pod saw "${seen}"`,
        );
      }
    }
  }
} finally {
  await driver.close();
}
assert.deepEqual(problems, [], problems.join("\n"));
console.log("journey ok");
