// No Docker engine runs here, so the Dockerfile is checked in two ways: an
// offline linter, and its exact ENTRYPOINT + CMD run on this machine with
// /data mapped to a temp dir (and port 8080 to a free one).
import assert from "node:assert/strict";
import { validate } from "dockerfile-utils";
import { signedPod, spawnBroker } from "../support/helpers.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const dockerfile = await Deno.readTextFile(
  new URL("../../Dockerfile", import.meta.url),
);

/** The JSON-array form of an instruction, e.g. ENTRYPOINT ["deno", ...]. */
function execForm(instruction: string): string[] {
  const match = new RegExp(`^${instruction}\\s+(\\[.*\\])\\s*$`, "m").exec(
    dockerfile,
  );
  assert.ok(match, `${instruction} in exec form`);
  return JSON.parse(match[1]!);
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

Deno.test("Dockerfile lints clean with dockerfile-utils", () => {
  assert.deepEqual(validate(dockerfile), []);
});

Deno.test("Dockerfile runs as deno on denoland/deno:2.9.6 with narrow permissions", () => {
  assert.match(dockerfile, /^FROM denoland\/deno:2\.9\.6$/m);
  assert.match(dockerfile, /^USER deno$/m);
  assert.match(dockerfile, /^EXPOSE 8080$/m);
  assert.match(dockerfile, /^VOLUME \/data$/m);
  assert.match(
    dockerfile,
    /^RUN deno install --frozen --entrypoint src\/mod\.ts$/m,
  );
  assert.match(dockerfile, /^HEALTHCHECK .*\\\n\s+CMD \["deno", "eval"/m);
  const entrypoint = execForm("ENTRYPOINT");
  assert.ok(!entrypoint.some((arg) => arg === "-A" || arg === "--allow-all"));
  assert.deepEqual(execForm("CMD"), [
    "--registry",
    "sqlite",
    "--data-dir",
    "/data",
    "--port",
    "8080",
  ]);
});

Deno.test("Dockerfile's ENTRYPOINT and CMD serve, pass the HEALTHCHECK and stop on SIGTERM", async () => {
  const dataDir = await Deno.makeTempDir();
  const port = freePort();
  const map = (arg: string) =>
    arg.replaceAll("/data", dataDir).replace(/^8080$/, String(port)).replace(
      "127.0.0.1:8080",
      `127.0.0.1:${port}`,
    );
  const [command, ...args] = [...execForm("ENTRYPOINT"), ...execForm("CMD")]
    .map(map);
  assert.equal(command, "deno");
  await using broker = await spawnBroker(args, ROOT);
  assert.equal(broker.port, port);
  const health = await fetch(`http://127.0.0.1:${port}/health`);
  assert.equal((await health.json()).status, "ok");

  const healthcheck = /HEALTHCHECK[^\n]*\\\n\s+CMD (\[.*\])/.exec(
    dockerfile,
  )![1]!;
  const [, ...probe] = (JSON.parse(healthcheck) as string[]).map(map);
  const probed = await new Deno.Command(Deno.execPath(), {
    args: probe,
    stdout: "null",
  }).output();
  assert.equal(probed.code, 0, "HEALTHCHECK passes");

  const uploaded = await fetch(`http://127.0.0.1:${port}/pods`, {
    method: "POST",
    headers: { "Content-Type": "text/html" },
    body: await signedPod(),
  });
  assert.equal(uploaded.status, 201);
  const { id } = await uploaded.json();
  const stored = [...Deno.readDirSync(`${dataDir}/blobs`)].map((entry) =>
    entry.name
  );
  assert.deepEqual(stored, [id]);

  assert.equal(await broker.stop(), 0);
});
