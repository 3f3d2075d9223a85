// Apps written for y-webrtc (Yjs) and PeerJS run as pods on this broker:
// the real npm packages built into signed pods with `build`, in Debian's
// Chromium (tests/support/compat_journey.ts, in a loopback-only network
// namespace when it can), on one broker and on two brokers sharing Redis;
// and the notes example (examples/notes/) on a pod origin.
import assert from "node:assert/strict";
import { supportFile } from "../support/paths.ts";
import { join } from "node:path";
import {
  browserTest,
  chromiumNotice,
  runJourneyOk,
} from "../support/browser.ts";
import { buildCompatPod } from "../support/compat_pods.ts";
import { haveRedis } from "../support/redis.ts";

const JOURNEY = supportFile("compat_journey.ts");
const NOTES_JOURNEY = supportFile("notes_journey.ts");
chromiumNotice("the y-webrtc and PeerJS journeys");
const HAVE_REDIS = haveRedis();

/** Builds the app's pod into a temp file (outside the namespace: it may fetch). */
async function builtPod(app: "yjs" | "peerjs"): Promise<string> {
  const html = await buildCompatPod(`tests/testdata/compat/${app}`, app);
  const dir = await Deno.makeTempDir({ prefix: "compat-journey-" });
  const path = join(dir, `${app}.html`);
  await Deno.writeFile(path, html);
  return path;
}

async function journey(app: "yjs" | "peerjs", bus: boolean): Promise<void> {
  const pod = await builtPod(app);
  try {
    await runJourneyOk(JOURNEY, [app, pod, ...(bus ? ["--bus"] : [])]);
  } finally {
    await Deno.remove(join(pod, ".."), { recursive: true });
  }
}

browserTest(
  "compat: two Yjs visitors edit one document through /y-webrtc, with and without a password; a third joins late",
  () => journey("yjs", false),
);

browserTest(
  "compat: two PeerJS visitors connect by id through /peerjs and exchange data both ways; a duplicate id gets unavailable-id; a reconnect keeps its id",
  () => journey("peerjs", false),
);

/** A journey across two brokers on Redis (skipped without redis-server). */
function busTest(name: string, fn: () => Promise<void>): void {
  if (HAVE_REDIS) browserTest(name, fn);
}

busTest(
  "compat bus: Yjs visitors on two brokers sharing Redis edit one document, with and without a password",
  () => journey("yjs", true),
);

busTest(
  "compat bus: PeerJS visitors on two brokers sharing Redis connect by id; the duplicate id is refused across them",
  () => journey("peerjs", true),
);

browserTest(
  "examples: the notes pod (Yjs, y-webrtc) on its own origin: two visitors type into one text and see who is typing",
  async () => {
    // UPDATE_SCREENSHOT=1 refreshes examples/notes/screenshot.png.
    const html = await buildCompatPod("examples/notes", "Notes");
    const dir = await Deno.makeTempDir({ prefix: "notes-journey-" });
    try {
      await Deno.writeFile(join(dir, "notes.html"), html);
      const shot = join(dir, "notes.png");
      await runJourneyOk(NOTES_JOURNEY, [join(dir, "notes.html"), shot]);
      assert.ok((await Deno.stat(shot)).size > 10_000, "a screenshot");
      if (Deno.env.get("UPDATE_SCREENSHOT")) {
        await Deno.copyFile(
          shot,
          new URL("../../examples/notes/screenshot.png", import.meta.url),
        );
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
