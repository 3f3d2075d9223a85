// The metrics: counters move with the events fed in, labels stay bounded,
// and Prometheus's own `promtool check metrics` accepts the exposition.
import assert from "node:assert/strict";
import { inCi } from "../support/gated.ts";
import { existsSync } from "node:fs";
import { Metrics, METRICS_CONTENT_TYPE } from "../../src/operator/metrics.ts";
import { createBroker } from "../../src/http/broker.ts";
import { resolveOptions } from "../../src/config/options.ts";
import { MemoryRegistry } from "../../src/registries/memory.ts";
import { silentLogger } from "../../src/_util/log.ts";

const PROMTOOL = "/usr/bin/promtool";
const hasPromtool = existsSync(PROMTOOL);
if (!hasPromtool) {
  console.error(
    `\n!!! ${PROMTOOL} is missing: the promtool check ${
      inCi ? "FAILS in CI" : "is SKIPPED"
    }.\n!!! Install it: sudo apt-get install -y prometheus\n`,
  );
}

/** Every sample line as name{labels} -> value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

function feed(metrics: Metrics): void {
  metrics.request({
    route: "/pods",
    method: "POST",
    status: 201,
    durationSeconds: 0.02,
    bytesIn: 4096,
    bytesOut: 120,
  });
  metrics.uploadAccepted();
  metrics.request({
    route: "/pods",
    method: "POST",
    status: 422,
    durationSeconds: 0.004,
    bytesIn: 2048,
  });
  metrics.uploadRefused("signature_invalid");
  metrics.uploadRefused("made_up_code");
  for (let i = 0; i < 3; i++) {
    metrics.request({
      route: "/:id",
      method: "GET",
      status: 200,
      durationSeconds: 0.0005,
      bytesOut: 1000,
    });
    metrics.podHit();
  }
  metrics.request({
    route: "/:id",
    method: "GET",
    status: 410,
    durationSeconds: 0.001,
  });
  // A raw path or an odd method must not become a label value.
  metrics.request({
    route: "/AbCdEf123456?x=1",
    method: "BREW",
    status: 404,
    durationSeconds: 0.3,
  });
  metrics.request({
    route: null,
    method: "GET",
    status: 404,
    durationSeconds: 0.001,
  });
  metrics.signal();
  metrics.signal();
  metrics.signalingError("rate_limited");
  metrics.signalingError("<script>");
  metrics.socketClosed(1000);
  metrics.socketClosed(1013);
  metrics.socketClosed(4321);
}

/** The route labels the tests feed (the broker passes its route table's). */
const ROUTES = ["/pods", "/:id"];

Deno.test("Metrics counts requests, uploads, hits and signaling by bounded labels", () => {
  using metrics = new Metrics({
    eventLoopSampleMs: 0,
    stats: () => ({ sockets: 4, sessions: 1, peers: 3 }),
    routes: ROUTES,
    problemCodes: ["signature_invalid", "busy"],
  });
  feed(metrics);
  const s = samples(metrics.render());
  const at = (key: string) => s.get(key);
  assert.equal(
    at(
      'pod_broker_http_requests_total{route="/pods",method="POST",status="201"}',
    ),
    1,
  );
  assert.equal(
    at(
      'pod_broker_http_requests_total{route="/:id",method="GET",status="200"}',
    ),
    3,
  );
  assert.equal(
    at(
      'pod_broker_http_requests_total{route="other",method="other",status="404"}',
    ),
    1,
  );
  assert.equal(
    at(
      'pod_broker_http_requests_total{route="unmatched",method="GET",status="404"}',
    ),
    1,
  );
  assert.equal(at('pod_broker_http_received_bytes_total{route="/pods"}'), 6144);
  assert.equal(at('pod_broker_http_sent_bytes_total{route="/:id"}'), 3000);
  assert.equal(at("pod_broker_uploads_accepted_total"), 1);
  assert.equal(
    at('pod_broker_uploads_refused_total{code="signature_invalid"}'),
    1,
  );
  assert.equal(at('pod_broker_uploads_refused_total{code="other"}'), 1);
  assert.equal(at("pod_broker_pod_hits_total"), 3);
  assert.equal(at("pod_broker_signals_relayed_total"), 2);
  assert.equal(at('pod_broker_signaling_errors_total{code="rate_limited"}'), 1);
  assert.equal(at('pod_broker_signaling_errors_total{code="other"}'), 1);
  assert.equal(at('pod_broker_socket_closes_total{code="1013"}'), 1);
  assert.equal(at('pod_broker_socket_closes_total{code="other"}'), 1);
  assert.deepEqual(
    [
      at("pod_broker_sockets"),
      at("pod_broker_sessions"),
      at("pod_broker_peers"),
    ],
    [4, 1, 3],
  );
  // The duration histogram is cumulative and counts every request.
  assert.equal(
    at(
      'pod_broker_http_request_duration_seconds_bucket{route="/:id",le="0.001"}',
    ),
    4,
  );
  assert.equal(
    at(
      'pod_broker_http_request_duration_seconds_bucket{route="/:id",le="+Inf"}',
    ),
    4,
  );
  assert.equal(
    at('pod_broker_http_request_duration_seconds_count{route="/pods"}'),
    2,
  );
  assert.ok(
    Math.abs(
      at('pod_broker_http_request_duration_seconds_sum{route="/pods"}')! -
        0.024,
    ) < 1e-9,
  );
  assert.ok(at("process_resident_memory_bytes")! > 1_000_000);
  assert.ok(at("process_start_time_seconds")! > 1_700_000_000);
  assert.equal(at('pod_broker_build_info{version="0.1.0"}'), 1);
  // No raw path or pod id anywhere.
  assert.ok(!metrics.render().includes("AbCdEf123456"));
  assert.equal(metrics.counter("pod_broker_pod_hits_total"), 3);
  assert.equal(
    metrics.counter("pod_broker_uploads_refused_total", { code: "busy" }),
    0,
  );
  assert.throws(() => metrics.counter("nope"), RangeError);
  assert.equal(
    METRICS_CONTENT_TYPE,
    "text/plain; version=0.0.4; charset=utf-8",
  );
});

Deno.test("Metrics samples event-loop delay: a blocked loop shows in the histogram", async () => {
  using metrics = new Metrics({ eventLoopSampleMs: 10 });
  await new Promise((resolve) => setTimeout(resolve, 30));
  const start = performance.now();
  while (performance.now() - start < 150) {
    // Hold the event loop, as a slow handler would.
  }
  await new Promise((resolve) => setTimeout(resolve, 40));
  const s = samples(metrics.render());
  const count = s.get("pod_broker_event_loop_delay_seconds_count")!;
  assert.ok(count >= 2, `samples: ${count}`);
  assert.ok(
    s.get('pod_broker_event_loop_delay_seconds_bucket{le="0.1"}')! < count,
    "one sample was at least 100 ms late",
  );
  metrics.close();
  metrics.close();
});

Deno.test({
  name: "Metrics.render() passes promtool check metrics",
  ignore: !hasPromtool && !inCi,
  async fn() {
    assert.ok(
      hasPromtool,
      `${PROMTOOL} is missing: apt-get install -y prometheus`,
    );
    using metrics = new Metrics({
      eventLoopSampleMs: 5,
      stats: () => ({ sockets: 0, sessions: 0, peers: 0 }),
      routes: ROUTES,
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    feed(metrics);
    for (
      const text of [
        new Metrics({ eventLoopSampleMs: 0 }).render(),
        metrics.render(),
      ]
    ) {
      const child = new Deno.Command(PROMTOOL, {
        args: ["check", "metrics"],
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode(text));
      await writer.close();
      const { code, stdout, stderr } = await child.output();
      const said = new TextDecoder().decode(stdout) +
        new TextDecoder().decode(stderr);
      // promtool exits 0 when the format is valid; lint findings print too.
      assert.equal(code, 0, said);
      assert.equal(said.trim(), "", said);
    }
  },
});

/** A broker with metrics and nothing else to say. */
function metricsBroker(podDomain?: string) {
  return createBroker(resolveOptions({
    registry: new MemoryRegistry(),
    logger: silentLogger,
    accessLog: "off",
    metrics: { port: 0 },
    ...(podDomain === undefined ? {} : { podDomain }),
  }));
}

Deno.test("the broker's route labels are its route table's patterns, whatever the path", async () => {
  const broker = metricsBroker();
  try {
    const paths = {
      "/pods": "/pods",
      "/health": "/health",
      "/signal": "/signal",
      "/:id/meta": "/AbCdEf123456/meta",
      "/:id": "/AbCdEf123456",
    };
    for (const path of Object.values(paths)) {
      await (await broker.fetch(new Request(`http://a.test${path}`))).body
        ?.cancel();
    }
    await (await broker.fetch(new Request("http://a.test/x/y/z"))).body
      ?.cancel();
    const labels = new Set(
      [
        ...broker.metrics!.render().matchAll(
          /^pod_broker_http_requests_total\{route="([^"]*)"/gm,
        ),
      ].map((match) => match[1]),
    );
    assert.deepEqual(
      labels,
      new Set([...Object.keys(paths), "unmatched"]),
    );
  } finally {
    await broker.shutdown();
    broker.metrics!.close();
  }
});

Deno.test("a pod host's requests are labelled by its routes (/, /signal), and problem codes by the broker's table", async () => {
  const broker = metricsBroker("pods.test");
  try {
    // An unknown pod's label: 404 from the pod host's own "/" route.
    const host = "http://aaaaaaaaaaaaaaaaaaaa.pods.test";
    for (const path of ["/", "/signal", "/health"]) {
      await (await broker.fetch(new Request(`${host}${path}`))).body?.cancel();
    }
    await (await broker.fetch(
      new Request("http://a.test/pods", { method: "POST", body: "<p>x</p>" }),
    )).body?.cancel();
    const text = broker.metrics!.render();
    const labels = new Set(
      [...text.matchAll(/^pod_broker_http_requests_total\{route="([^"]*)"/gm)]
        .map((match) => match[1]),
    );
    assert.deepEqual(labels, new Set(["/", "/signal", "unmatched", "/pods"]));
    assert.match(
      text,
      /^pod_broker_uploads_refused_total\{code="[a-z_]+"\} 1$/m,
    );
    assert.doesNotMatch(
      text,
      /pod_broker_uploads_refused_total\{code="other"\} 1/,
    );
  } finally {
    await broker.shutdown();
    broker.metrics!.close();
  }
});
