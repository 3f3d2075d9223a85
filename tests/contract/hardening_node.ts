// The items of the third security review that are about the HTTP servers
// under the broker: the upgrade path and the send deadline (item 1), frames
// over the limit (item 9) and slow uploads beside /health (item 10). Each
// case is named after its item. Runs on all three adapters (see
// _support.ts); what only node:http can do is checked where `api.http` says
// node:http.
import assert from "node:assert/strict";
import {
  collect,
  parseRawResponse,
  RawConnection,
  signedPod,
  startServer,
  until,
  upload,
} from "./_support.ts";

const { cases, test } = collect();

/** The cases of this file. */
export const HARDENING_NODE_CASES = cases;

/** The headers of a WebSocket upgrade, sent to a route that is no WebSocket. */
const UPGRADE_HEADERS = "Connection: Upgrade\r\nUpgrade: websocket\r\n" +
  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";

/** Uploads `html` signed with a fresh key; returns the pod's id and bytes. */
async function stored(
  api: Parameters<typeof signedPod>[0],
  url: string,
  html: string,
) {
  const pod = await signedPod(api, html);
  const response = await upload(url, pod);
  assert.equal(response.status, 201, await response.clone().text());
  const { id } = await response.json();
  return { id: id as string, pod };
}

test("security round 3, item 1: a request with an Upgrade header to a route that is no WebSocket route is plain HTTP, and the connection serves the next request", async (api) => {
  await using t = await startServer(api);
  const { id, pod } = await stored(api, t.url, "<!doctype html><p>plain");
  const conn = await RawConnection.open(t.server.port);
  try {
    await conn.write(
      `GET /${id} HTTP/1.1\r\nHost: 127.0.0.1\r\n${UPGRADE_HEADERS}\r\n`,
    );
    const first = parseRawResponse(
      await conn.readUntil((text) => parseRawResponse(text).complete),
    );
    assert.equal(first.status, 200, first.head);
    assert.equal(first.body, new TextDecoder("latin1").decode(pod));
    // Not the upgrade path's answer, which always closed the connection.
    assert.doesNotMatch(first.head, /\r\nconnection: *close\r\n/i);
    const taken = conn.text().length;
    await conn.write(
      `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n${UPGRADE_HEADERS}\r\n`,
    );
    const second = parseRawResponse(
      (await conn.readUntil((text) =>
        parseRawResponse(text.slice(taken)).complete
      )).slice(taken),
    );
    assert.equal(second.status, 200, second.head);
    assert.equal(JSON.parse(second.body).status, "ok");
  } finally {
    await conn.close();
  }
});

for (const upgrade of [false, true]) {
  test(
    `security round 3, item 1: a client that stops reading a large pod${
      upgrade ? " asked for with an Upgrade header" : ""
    } is cut off after sendTimeoutMs`,
    async (api) => {
      const lines: string[] = [];
      await using t = await startServer(api, {
        sendTimeoutMs: 500,
        logger: (_level, message) => lines.push(message),
      });
      // Larger than what the connection's buffers take on loopback.
      const size = 24 * 1024 * 1024;
      const { id, pod } = await stored(
        api,
        t.url,
        `<!doctype html><p>${"x".repeat(size)}`,
      );
      const conn = await RawConnection.open(t.server.port);
      try {
        conn.pause();
        await conn.write(
          `GET /${id} HTTP/1.1\r\nHost: 127.0.0.1\r\n${
            upgrade ? UPGRADE_HEADERS : ""
          }\r\n`,
        );
        await until(
          () => lines.includes("Cut off a response its client stopped reading"),
          20_000,
        );
        // What the connection still holds arrives, then it ends, short.
        conn.resume();
        await Promise.race([
          conn.ended,
          new Promise((r) => setTimeout(r, 10_000)),
        ]);
        const received = conn.bytes();
        const head = new TextDecoder("latin1").decode(
          received.subarray(0, 200),
        );
        assert.match(head, /^HTTP\/1\.1 200 /);
        assert.ok(
          received.length < pod.length,
          `${received.length} bytes of a ${pod.length}-byte pod arrived`,
        );
      } finally {
        await conn.close();
      }
    },
    { timeoutMs: 60_000 },
  );
}
