// Operating a public broker (issue 13): Prometheus metrics on their own
// listener move with real traffic and pass promtool; the deny list refuses
// uploads (403, problem+json, CORS) and hides existing pods (410) until it
// changes. Runs on Deno and on the npm package under Node 22.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import process from "node:process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { within } from "../support/wait.ts";
import {
  assertProblem,
  newSeed,
  SAMPLE_HTML,
  signedPod,
  upload,
} from "./_pods.ts";
import {
  ANY_LOCAL_PORT,
  runCli,
  sleep,
  spawnBroker,
  startServer,
  tempDir,
} from "./_servers.ts";
import { test } from "./_suite.ts";
import { joinAll } from "./_wire.ts";

/** `promtool check metrics` over `text` (skipped loudly outside CI when missing). */
function promtool(text: string): Promise<{ code: number; output: string }> {
  return within(
    new Promise((resolve, reject) => {
      const child = spawn("promtool", ["check", "metrics"], {
        stdio: ["pipe", "pipe", "pipe"],
      });
      let output = "";
      child.stdout.setEncoding("utf8").on("data", (t) => (output += t));
      child.stderr.setEncoding("utf8").on("data", (t) => (output += t));
      child.once("error", (error) => {
        if ((error as { code?: string }).code === "ENOENT" && !process.env.CI) {
          console.error("\n!!! promtool is missing: its check is SKIPPED\n");
          resolve({ code: 0, output: "" });
        } else reject(error);
      });
      child.once("close", (code) => resolve({ code: code ?? 1, output }));
      child.stdin.on("error", () => {});
      child.stdin.end(text);
    }),
    "promtool to check the metrics",
  );
}

test("metrics: counters move after uploads, serves, refusals and signals; promtool accepts them", async (api) => {
  await using broker = await startServer(api, { metrics: { port: 0 } });
  assert.notEqual(broker.server.metricsPort, null);
  assert.notEqual(broker.server.metricsPort, broker.server.port);
  const metricsUrl = `http://127.0.0.1:${broker.server.metricsPort}/metrics`;
  // Never on the public port.
  const hidden = await fetch(`${broker.url}/metrics`);
  assert.equal(hidden.status, 404);
  await hidden.body?.cancel();
  const ok = await upload(broker.url, await signedPod(api) as BodyInit);
  assert.equal(ok.status, 201);
  const { id } = await ok.json();
  const tampered = await signedPod(api);
  tampered[tampered.length - 2]! ^= 1;
  await assertProblem(
    await upload(broker.url, tampered as BodyInit),
    422,
    "content_mismatch",
  );
  for (let i = 0; i < 2; i++) {
    await (await fetch(`${broker.url}/${id}`)).arrayBuffer();
  }
  await (await fetch(`${broker.url}/nope/nothing`)).body?.cancel();
  const { clients, ids } = await joinAll(broker.wsUrl, "m", 2);
  clients[0]!.send({ type: "signal", to: ids[1], data: { candidate: null } });
  assert.equal((await clients[1]!.next()).type, "signal");
  clients[0]!.send("not json");
  assert.equal((await clients[0]!.next()).code, "bad_json");
  await clients[0]!.close();
  await clients[1]!.close();
  await new Promise((r) => setTimeout(r, 50));

  const response = await fetch(metricsUrl);
  assert.equal(
    response.headers.get("Content-Type"),
    "text/plain; version=0.0.4; charset=utf-8",
  );
  const text = await response.text();
  const has = (line: string) =>
    assert.ok(text.split("\n").includes(line), `${line}\n${text}`);
  has(
    'pod_broker_http_requests_total{route="/pods",method="POST",status="201"} 1',
  );
  has(
    'pod_broker_http_requests_total{route="/pods",method="POST",status="422"} 1',
  );
  has(
    'pod_broker_http_requests_total{route="/:id",method="GET",status="200"} 2',
  );
  has(
    'pod_broker_http_requests_total{route="unmatched",method="GET",status="404"} 1',
  );
  has(
    'pod_broker_http_requests_total{route="/:id",method="GET",status="404"} 1',
  );
  has("pod_broker_uploads_accepted_total 1");
  has('pod_broker_uploads_refused_total{code="content_mismatch"} 1');
  has("pod_broker_pod_hits_total 2");
  has("pod_broker_signals_relayed_total 1");
  has('pod_broker_signaling_errors_total{code="bad_json"} 1');
  has('pod_broker_socket_closes_total{code="1005"} 2'); // closed by the client without a code
  has(
    'pod_broker_http_requests_total{route="/signal",method="GET",status="101"} 2',
  );
  has("pod_broker_sockets 0");
  assert.ok(!text.includes(id), "no pod id in the metrics");

  const checked = await promtool(text);
  assert.equal(checked.code, 0, checked.output);
});

test("deny list: uploads refused by key and by digest, existing pods hidden, then shown again", async (api) => {
  const denyList = new api.DenyList();
  await using broker = await startServer(api, { denyList });
  const seed = await newSeed(api);
  const pod = await signedPod(api, SAMPLE_HTML, {}, seed);
  const created = await upload(broker.url, pod as BodyInit);
  assert.equal(created.status, 201);
  const { id, ownerPubkey } = await created.json();
  const meta = await (await fetch(`${broker.url}/${id}/meta`)).json();

  denyList.replace({ keys: [ownerPubkey] });
  const byKey = await upload(broker.url, pod as BodyInit);
  assert.equal(byKey.headers.get("Access-Control-Allow-Origin"), "*");
  await assertProblem(byKey, 403, "owner_denied");
  for (
    const [path, method] of <[string, string][]> [[`/${id}`, "GET"], [
      `/${id}`,
      "HEAD",
    ], [
      `/${id}/meta`,
      "GET",
    ]]
  ) {
    const gone = await fetch(`${broker.url}${path}`, { method });
    if (method === "HEAD") {
      assert.equal(gone.status, 410);
      await gone.body?.cancel();
    } else await assertProblem(gone, 410, "pod_deleted");
  }

  denyList.replace({ contents: [meta.contentSha256] });
  const other = await signedPod(api, SAMPLE_HTML, {}, await newSeed(api));
  const byContent = await upload(broker.url, other as BodyInit);
  assert.equal(byContent.headers.get("Access-Control-Allow-Origin"), "*");
  await assertProblem(byContent, 403, "content_denied");

  denyList.replace({});
  const back = await fetch(`${broker.url}/${id}`);
  assert.equal(back.status, 200);
  await back.body?.cancel();
});

test("pod-broker --deny-list FILE: SIGHUP reloads it; a bad file is exit 2; --metrics-port serves /metrics", async (api) => {
  await using dir = await tempDir();
  const file = join(dir.path, "deny.txt");
  await writeFile(file, "# nothing denied yet\n");
  await using broker = await spawnBroker(api, [
    "--deny-list",
    file,
    "--metrics-port",
    "0",
    ...ANY_LOCAL_PORT,
  ]);
  const base = `http://127.0.0.1:${broker.port}`;
  const pod = await signedPod(api, SAMPLE_HTML, {}, await newSeed(api));
  const created = await upload(base, pod);
  assert.equal(created.status, 201);
  const { id, ownerPubkey } = await created.json();
  const metricsUrl = /"metrics":"([^"]+)"/.exec(broker.log)?.[1];
  assert.ok(metricsUrl, broker.log);
  assert.match(await (await fetch(metricsUrl)).text(), /pod_hits_total/);

  await writeFile(file, `# taken down\nkey:${ownerPubkey}\n`);
  process.kill(broker.pid, "SIGHUP");
  let status = 0;
  for (let attempt = 0; attempt < 100 && status !== 410; attempt++) {
    const response = await fetch(`${base}/${id}`);
    status = response.status;
    await response.body?.cancel();
    if (status !== 410) await sleep(50);
  }
  assert.equal(status, 410);
  await assertProblem(await upload(base, pod), 403, "owner_denied");
  // A bad line keeps the old list in force.
  await writeFile(file, "nonsense\n");
  process.kill(broker.pid, "SIGHUP");
  await sleep(300);
  const still = await fetch(`${base}/${id}`);
  assert.equal(still.status, 410);
  await still.body?.cancel();
  assert.equal(await broker.stop(), 0);

  const bad = await runCli(api, ["--deny-list", file, "--port", "0"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /line 1/);
  assert.equal(bad.stderr.trim().split("\n").length, 1);
});
