// Request framing a front may parse differently from the broker: an
// HTTP/1.0 request with Transfer-Encoding, whose framing RFC 9112 section
// 6.1 calls faulty. A front that reads such a body by its Content-Length,
// or not at all, would see one request where the broker sees two.
import assert from "node:assert/strict";
import { startServer } from "./_servers.ts";
import { within } from "../support/wait.ts";
import { test } from "./_suite.ts";
import { RawConnection } from "./_wire.ts";

/** Every status line in `text`, in order. */
function statusLines(text: string): string[] {
  return [...text.matchAll(/HTTP\/1\.[01] \d{3}[^\r\n]*/g)].map((m) => m[0]);
}

for (const method of ["POST /pods", "GET /health"]) {
  test(`framing: an HTTP/1.0 ${method} with Transfer-Encoding is refused with 400 and its connection closed, so a request hidden in its body is never answered`, async (api) => {
    await using t = await startServer(api);
    const conn = await RawConnection.open(t.server.port);
    try {
      const hidden = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
      await conn.write(
        `${method} HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n` +
          `Content-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n` +
          `0\r\n\r\n${hidden}`,
      );
      // The broker closes the connection after its one answer.
      await within(conn.ended, "the connection to close after the 400");
      const lines = statusLines(conn.text());
      assert.equal(lines.length, 1, `answers: ${JSON.stringify(lines)}`);
      assert.match(lines[0]!, / 400 /);
    } finally {
      await conn.close();
    }
  });
}
