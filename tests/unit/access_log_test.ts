// The access log line: its fields, what it never carries, and the sink.
import assert from "node:assert/strict";
import {
  type AccessLogEntry,
  createAccessLog,
  formatAccessLine,
} from "../../src/operator/access_log.ts";

const ENTRY: AccessLogEntry = {
  time: new Date("2026-11-21T12:00:00.000Z"),
  method: "GET",
  route: "/:id",
  status: 200,
  bytes: 5120,
  durationMs: 2.5,
  podId: "AbCdEf123456",
};

Deno.test("formatAccessLine() writes one JSON line with the fields in order", () => {
  const line = formatAccessLine(ENTRY);
  assert.ok(!line.includes("\n"));
  assert.deepEqual(
    Object.keys(JSON.parse(line)).join(),
    "time,method,route,status,bytes,durationMs,podId",
  );
  assert.deepEqual(JSON.parse(line), {
    ...ENTRY,
    time: "2026-11-21T12:00:00.000Z",
  });
});

Deno.test("formatAccessLine() never carries a query string, a malformed id or a strange method", () => {
  const line = JSON.parse(formatAccessLine({
    ...ENTRY,
    time: 0,
    method: "G\nET /evil",
    route: "/:id?token=secret#frag",
    podId: "../../etc/passwd",
    bytes: null,
    durationMs: 0.1234567,
  }));
  assert.equal(line.time, "1970-01-01T00:00:00.000Z");
  assert.equal(line.method, "OTHER");
  assert.equal(line.route, "/:id");
  assert.equal(line.podId, null);
  assert.equal(line.bytes, null);
  assert.equal(line.durationMs, 0.123);
  assert.ok(!JSON.stringify(line).includes("secret"));
  // No route matched, no pod.
  const unmatched = JSON.parse(
    formatAccessLine({ ...ENTRY, route: null, podId: undefined, status: 404 }),
  );
  assert.equal(unmatched.route, null);
  assert.equal(unmatched.podId, null);
});

Deno.test("formatAccessLine() writes ip only when given", () => {
  assert.equal("ip" in JSON.parse(formatAccessLine(ENTRY)), false);
  assert.equal(
    JSON.parse(formatAccessLine({ ...ENTRY, ip: "2001:db8::1" })).ip,
    "2001:db8::1",
  );
});

Deno.test("createAccessLog() drops the client address unless asked, and survives a failing sink", () => {
  const lines: string[] = [];
  const withIp = { ...ENTRY, ip: "192.0.2.7" };
  createAccessLog({ sink: (line) => lines.push(line) })(withIp);
  createAccessLog({ sink: (line) => lines.push(line), includeIp: true })(
    withIp,
  );
  assert.equal(JSON.parse(lines[0]!).ip, undefined);
  assert.equal(JSON.parse(lines[1]!).ip, "192.0.2.7");
  const log = createAccessLog({
    sink: () => {
      throw new Error("EPIPE");
    },
  });
  assert.doesNotThrow(() => log(ENTRY));
});

Deno.test("createAccessLog() writes to standard output by default", async () => {
  const script = `
    import { createAccessLog } from ${
    JSON.stringify(
      new URL("../../src/operator/access_log.ts", import.meta.url).href,
    )
  };
    const log = createAccessLog();
    log({ time: 0, method: "HEAD", route: "/health", status: 200, bytes: null, durationMs: 1 });
    log({ time: 0, method: "POST", route: "/pods", status: 201, bytes: 80, durationMs: 9, ip: "192.0.2.1" });
  `;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["eval", script],
    stdin: "null",
  }).output();
  const text = new TextDecoder();
  assert.equal(code, 0, text.decode(stderr));
  assert.equal(text.decode(stderr), "");
  const lines = text.decode(stdout).trimEnd().split("\n").map((l) =>
    JSON.parse(l)
  );
  assert.deepEqual(lines.map((l) => [l.method, l.route, l.status, l.ip]), [
    ["HEAD", "/health", 200, undefined],
    ["POST", "/pods", 201, undefined],
  ]);
});
