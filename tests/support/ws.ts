// WebSocket helpers for Deno tests. The queued client is the contract
// suite's (tests/contract/_wire.ts, runtime-neutral); the raw TCP client
// here is Deno's own (`Deno.connect`), for handshakes and silent peers.
export {
  type Frame,
  joinAll,
  maskedTextFrame,
  TestClient,
} from "../contract/_wire.ts";

/**
 * A WebSocket handshake over raw TCP: returns the status line and the open
 * connection (for a silent peer that never answers pings).
 */
export async function rawHandshake(
  port: number,
  headers: Record<string, string> = {},
): Promise<{ status: number; head: string; conn: Deno.TcpConn }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join(
    "",
  );
  await conn.write(new TextEncoder().encode(
    "GET /signal HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
      extra + "\r\n",
  ));
  let head = "";
  const buffer = new Uint8Array(4096);
  while (!head.includes("\r\n\r\n")) {
    const n = await conn.read(buffer);
    if (n === null) break;
    head += new TextDecoder().decode(buffer.subarray(0, n));
  }
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  return { status, head, conn };
}
