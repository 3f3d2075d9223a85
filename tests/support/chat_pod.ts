// The hand-written chat (examples/chat/chat.html), signed by a fresh key and
// uploaded: what the browser journeys open in their tabs.
import assert from "node:assert/strict";
import { generateKeyPair } from "../../src/pod/ed25519.ts";
import { signPod } from "../../src/pod/sign.ts";

/**
 * Signs the chat and uploads it to `broker`.
 *
 * @param broker The broker's base URL, such as `http://127.0.0.1:8080`.
 * @returns The pod's id and URL.
 */
export async function uploadChatPod(
  broker: string,
): Promise<{ id: string; url: string }> {
  const html = await Deno.readFile(
    new URL("../../examples/chat/chat.html", import.meta.url),
  );
  const pod = await signPod(html, (await generateKeyPair()).seed, {
    name: "Chat",
  });
  const uploaded = await fetch(`${broker}/pods`, {
    method: "POST",
    headers: { "Content-Type": "text/html; charset=utf-8" },
    body: pod as BodyInit,
  });
  assert.equal(uploaded.status, 201);
  return await uploaded.json();
}
