// Idle connections and the timeouts that close them: a keep-alive
// connection outlives a front's reuse of it, and a stalled event loop does
// not make a reading client look idle. Runs on both runtimes (see
// _suite.ts).
import assert from "node:assert/strict";
import { signedPod, upload } from "./_pods.ts";
import { sleep, startServer } from "./_servers.ts";
import { test } from "./_suite.ts";
import { parseRawResponse, RawConnection, uploadHead } from "./_wire.ts";

/** Blocks this process's event loop for `ms`, as a long task does. */
function stall(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) { /* busy */ }
}

test("a keep-alive connection idle for 6 s takes its next request, an upload, as a front reusing its upstream connections expects", async (api) => {
  await using t = await startServer(api);
  const conn = await RawConnection.open(t.server.port);
  try {
    await conn.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    const first = await conn.readUntil((text) =>
      parseRawResponse(text).complete
    );
    assert.match(first, /^HTTP\/1\.1 200 /);
    assert.doesNotMatch(first, /\r\nconnection: close\r\n/i);
    // Past Node's default keep-alive timeout (5 s): a server that closes
    // here resets a proxy's next request on this connection.
    await sleep(6_000);
    const seen = first.length;
    const pod = await signedPod(api);
    await conn.write(uploadHead(pod.length));
    await conn.write(pod);
    const next = await conn.nextResponse(seen);
    assert.match(next, /^HTTP\/1\.1 201 /, JSON.stringify(next.slice(0, 80)));
  } finally {
    await conn.close();
  }
});

test("a stalled event loop does not cut off a client that kept reading: the send deadline waits for what arrived meanwhile", async (api) => {
  // A 24 MiB pod, more than the kernel's socket buffers hold, and a send
  // deadline of 300 ms. Mid-response, this process (the broker's and its
  // client's) blocks for 1 s. When the loop runs again, the deadline's
  // timer is due before the reads and writes that then go on are seen; the
  // client reads on at once, and gets the whole pod.
  await using t = await startServer(api, { sendTimeoutMs: 300 });
  const html = new Uint8Array(24 * 1024 * 1024).fill(0x61);
  html.set(new TextEncoder().encode("<!doctype html><p>big</p><!--"));
  html.set(new TextEncoder().encode("-->"), html.length - 3);
  const pod = await signedPod(api, html);
  const created = await upload(t.url, pod);
  assert.equal(created.status, 201);
  const { url } = await created.json();
  const response = await fetch(url);
  assert.equal(response.status, 200);
  const reader = response.body!.getReader();
  let received = 0;
  let stalled = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    received += value.length;
    if (!stalled && received >= 2 * 1024 * 1024) {
      stalled = true;
      stall(1_000);
    }
  }
  assert.ok(stalled, "the response ended before the stall");
  assert.equal(received, pod.length);
});
