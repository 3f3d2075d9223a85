// The access log line: its fields, what it never carries, and the sink.
import assert from "node:assert/strict";
import fc from "fast-check";
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

Deno.test("formatAccessLine() writes what JSON.stringify writes, numbers included", () => {
  fc.assert(
    fc.property(
      fc.record({
        time: fc.integer({ min: 0, max: 4e12 }),
        method: fc.constantFrom("GET", "HEAD", "POST", "PUT", "delete"),
        route: fc.option(fc.constantFrom("/:id", "/pods", "/health", '/é/\\"')),
        status: fc.integer({ min: 100, max: 599 }),
        bytes: fc.option(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })),
        durationMs: fc.oneof(
          fc.double({ min: 0, max: 1e9, noNaN: true }),
          fc.integer({ min: 0, max: 10_000 }).map((us) => us / 1000),
        ),
        podId: fc.stringMatching(/^[A-Za-z0-9]{12}$/),
        ip: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
      }),
      (entry) => {
        const expected = {
          time: new Date(entry.time).toISOString(),
          method: entry.method,
          route: entry.route,
          status: entry.status,
          bytes: entry.bytes,
          durationMs: Math.round(entry.durationMs * 1000) / 1000,
          podId: entry.podId,
          ...(entry.ip === undefined ? {} : { ip: entry.ip }),
        };
        assert.equal(formatAccessLine(entry), JSON.stringify(expected));
      },
    ),
    { numRuns: 2000 },
  );
});

Deno.test("formatAccessLine() writes null for a count or a duration that is not one", () => {
  const line = JSON.parse(formatAccessLine({
    ...ENTRY,
    status: Number.NaN,
    bytes: -1,
    durationMs: Number.POSITIVE_INFINITY,
  }));
  assert.deepEqual([line.status, line.bytes, line.durationMs], [
    null,
    null,
    null,
  ]);
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
    // Enough to fill several batches, the last one written at exit.
    for (let i = 0; i < 2000; i++) {
      log({ time: i, method: "GET", route: "/:id", status: 200, bytes: i, durationMs: 0.5 });
    }
  `;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["eval", script],
    stdin: "null",
    // Bounded: a child that hangs is killed, and the exit code check fails.
    signal: AbortSignal.timeout(30_000),
  }).output();
  const text = new TextDecoder();
  assert.equal(code, 0, text.decode(stderr));
  assert.equal(text.decode(stderr), "");
  const lines = text.decode(stdout).trimEnd().split("\n").map((l) =>
    JSON.parse(l)
  );
  assert.deepEqual(
    lines.slice(0, 2).map((l) => [l.method, l.route, l.status, l.ip]),
    [
      ["HEAD", "/health", 200, undefined],
      ["POST", "/pods", 201, undefined],
    ],
  );
  assert.deepEqual(
    lines.slice(2).map((l) => l.bytes),
    Array.from({ length: 2000 }, (_, i) => i),
  );
});
