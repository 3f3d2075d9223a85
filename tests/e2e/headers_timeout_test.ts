// Slow clients (issue 11): a request head that does not arrive whole in
// `headersTimeoutMs` gets 408 and the connection is closed, on the Node
// adapter (run here on Deno's node:http, which honours it as Node does).
// Deno.serve has no header timeout: see docs/operators/public.md, "Limits and abuse".
import assert from "node:assert/strict";
import { createSignalServer } from "../../src/adapters/node.ts";
import { silentLogger } from "../../src/_util/log.ts";
import { MemoryRegistry } from "../../src/registries/memory.ts";

Deno.test("node adapter: a half-sent request head gets 408 and is closed after headersTimeoutMs", async () => {
  const server = await createSignalServer({
    registry: new MemoryRegistry(),
    port: 0,
    hostname: "127.0.0.1",
    logger: silentLogger,
    headersTimeoutMs: 500,
  });
  try {
    const conn = await Deno.connect({
      hostname: "127.0.0.1",
      port: server.port,
    });
    await conn.write(
      new TextEncoder().encode("GET /health HTTP/1.1\r\nHost: x\r\n"),
    );
    let text = "";
    const buffer = new Uint8Array(4096);
    const deadline = setTimeout(() => conn.close(), 10_000);
    try {
      for (;;) {
        const n = await conn.read(buffer);
        if (n === null) break;
        text += new TextDecoder().decode(buffer.subarray(0, n));
      }
    } finally {
      clearTimeout(deadline);
    }
    conn.close();
    assert.match(text, /^HTTP\/1\.1 408 /);
    // A prompt client is served as usual.
    const health = await fetch(`http://127.0.0.1:${server.port}/health`);
    assert.equal(health.status, 200);
    await health.body?.cancel();
  } finally {
    await server.close();
  }
});
