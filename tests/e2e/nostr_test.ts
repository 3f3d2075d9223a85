// An app written for Trystero runs as a pod on this broker, signaling only
// through its /nostr: the real npm package built into a signed pod with
// `build`, in Debian's Chromium (tests/support/nostr_journey.ts, in a
// loopback-only network namespace when it can), across a broker restart.
// And nostr-tools, a Nostr client library, drives /nostr on Deno.serve and
// on node:http (tests/contract/nostr.ts has the relay's every rule; this
// shows that a real client reads its answers as meant).
import assert from "node:assert/strict";
import { join } from "node:path";
import { finalizeEvent, generateSecretKey } from "nostr-tools/pure";
import { Relay } from "nostr-tools/relay";
import { createSignalServer as createNodeServer } from "../../src/adapters/node.ts";
import { startServer } from "../contract/_servers.ts";
import { DENO_API } from "../support/helpers.ts";
import { within } from "../support/wait.ts";
import {
  browserTest,
  chromiumNotice,
  runJourneyOk,
} from "../support/browser.ts";
import { buildCompatPod } from "../support/compat_pods.ts";
import { supportFile } from "../support/paths.ts";

chromiumNotice("the Trystero journey");

browserTest(
  "nostr: two Trystero visitors configured with only this broker's /nostr find each other and exchange messages both ways; after a broker restart a third joins them",
  async () => {
    // Built outside the namespace: the first install may fetch.
    const html = await buildCompatPod(
      "tests/testdata/nostr/trystero",
      "Trystero",
    );
    const dir = await Deno.makeTempDir({ prefix: "nostr-journey-" });
    try {
      const pod = join(dir, "trystero.html");
      await Deno.writeFile(pod, html);
      await runJourneyOk(supportFile("nostr_journey.ts"), [pod]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

for (
  const [http, api] of [
    ["Deno.serve", DENO_API],
    ["node:http", { ...DENO_API, createSignalServer: createNodeServer }],
  ] as const
) {
  Deno.test(`nostr: nostr-tools publishes and subscribes through /nostr (${http}): OK, EOSE, CLOSE; a kind-1 event and a forged signature refused; nothing stored`, async () => {
    await using t = await startServer(api);
    const relay = await Relay.connect(`${t.url.replace("http", "ws")}/nostr`);
    try {
      await nostrToolsJourney(t.url, relay);
    } finally {
      relay.close();
    }
  });
}

async function nostrToolsJourney(url: string, relay: Relay): Promise<void> {
  const secret = generateSecretKey();
  const sign = (kind: number, content: string) =>
    finalizeEvent({
      kind,
      tags: [["x", "room"]],
      content,
      created_at: Math.floor(Date.now() / 1000),
    }, secret);
  const subscriptions = async () =>
    (await (await fetch(`${url}/health`)).json()).compat.nostr.subscriptions;
  const heard: string[] = [];
  let onHeard = () => {};
  const { promise: eose, resolve: eosed } = Promise.withResolvers<void>();
  const sub = relay.subscribe([{ kinds: [20_001], "#x": ["room"] }], {
    onevent: (event) => {
      heard.push(event.content);
      onHeard();
    },
    oneose: eosed,
  });
  await within(eose, "EOSE");
  assert.equal(await subscriptions(), 1);
  // An ephemeral event: OK, and back to the subscription.
  const arrived = new Promise<void>((resolve) => (onHeard = resolve));
  assert.equal(await relay.publish(sign(20_001, "hello")), "");
  await within(arrived, "the event through the subscription");
  assert.deepEqual(heard, ["hello"]);
  // Refused: a kind-1 note (blocked), a forged signature (invalid).
  await assert.rejects(relay.publish(sign(1, "a note")), /blocked: /);
  const forged = { ...sign(20_001, "forged"), sig: sign(20_001, "x").sig };
  await assert.rejects(relay.publish(forged), /invalid: bad signature/);
  // Nothing stored: a later subscription gets EOSE and no event.
  const stored: string[] = [];
  const { promise: lateEose, resolve: lateEosed } = Promise.withResolvers<
    void
  >();
  const late = relay.subscribe([{ kinds: [20_001, 1], "#x": ["room"] }], {
    onevent: (event) => stored.push(event.content),
    oneose: lateEosed,
  });
  await within(lateEose, "the later subscription's EOSE");
  assert.deepEqual(stored, []);
  // CLOSE ends a subscription on the relay.
  late.close();
  sub.close();
  for (let i = 0; (await subscriptions()) !== 0; i++) {
    assert.ok(i < 100, "the relay ends both subscriptions");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.deepEqual(heard, ["hello"]);
}
