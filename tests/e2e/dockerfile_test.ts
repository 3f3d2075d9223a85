// The Dockerfile, linted offline, and built and run for real: buildah builds
// the image (docker format: OCI drops HEALTHCHECK) on its fully qualified
// base, which scripts/base_image.sh makes from Debian and npm's deno where
// no registry serves it, and podman runs it. Where buildah or podman is
// missing these tests are skipped with a loud notice; in CI (which installs
// them) they fail instead.
import assert from "node:assert/strict";
import { freePort } from "../support/ports.ts";
import { inCi } from "../support/gated.ts";
import { validate } from "dockerfile-utils";
import { signedPod } from "../support/helpers.ts";
import { havePostgres } from "../support/postgres.ts";
import { haveRedis } from "../support/redis.ts";
import { assertEnvBroker, startEnvServices } from "../support/env_start.ts";
import { sendOversizedFrame } from "../support/oversized_frame.ts";
import {
  buildImage,
  type Container,
  containerToolsMissing,
  LIMITS,
  run,
  runOk,
  startContainer,
  TEST_IMAGE,
  waitForHealth,
} from "../support/container.ts";

const dockerfile = await Deno.readTextFile(
  new URL("../../Dockerfile", import.meta.url),
);
const missing = containerToolsMissing();
if (missing !== null) {
  console.error(
    `\n!!! The container tests ${
      inCi ? "FAIL in CI" : "are SKIPPED"
    }: ${missing}.\n!!! Install Debian's podman buildah runc slirp4netns debootstrap and run as root.\n`,
  );
}
const ignore = missing !== null && !inCi;

/** The JSON-array form of an instruction, e.g. ENTRYPOINT ["deno", ...]. */
function execForm(instruction: string): string[] {
  const match = new RegExp(`^${instruction}\\s+(\\[.*\\])\\s*$`, "m").exec(
    dockerfile,
  );
  assert.ok(match, `${instruction} in exec form`);
  return JSON.parse(match[1]!);
}

// The image, built once for the tests of this file (whichever runs first).
let built: Promise<number> | undefined;
function image(): Promise<number> {
  return built ??= (async () => {
    const started = Date.now();
    await buildImage();
    return Date.now() - started;
  })();
}

Deno.test("Dockerfile lints clean with dockerfile-utils", () => {
  assert.deepEqual(validate(dockerfile), []);
});

Deno.test("Dockerfile names its base in full, runs as deno from serve.lock with narrow permissions", () => {
  assert.match(
    dockerfile,
    /^ARG BASE_IMAGE=docker\.io\/denoland\/deno:2\.9\.6\nFROM \$\{BASE_IMAGE\}$/m,
  );
  assert.match(dockerfile, /^USER deno$/m);
  assert.match(dockerfile, /^EXPOSE 8080$/m);
  assert.match(dockerfile, /^VOLUME \/data$/m);
  assert.match(dockerfile, /^COPY --chown=deno:deno deno\.json serve\.lock/m);
  assert.match(
    dockerfile,
    /deno install --frozen --lock=serve\.lock --entrypoint src\/mod_node\.ts$/m,
  );
  const entrypoint = execForm("ENTRYPOINT");
  assert.ok(!entrypoint.some((arg) => arg === "-A" || arg === "--allow-all"));
  for (const flag of ["--cached-only", "--frozen", "--lock=serve.lock"]) {
    assert.ok(entrypoint.includes(flag), flag);
  }
  assert.deepEqual(execForm("CMD"), [
    "--registry",
    "sqlite",
    "--data-dir",
    "/data",
    "--port",
    "8080",
  ]);
});

/** The image's config as podman reads it. */
async function imageConfig(): Promise<
  { Healthcheck?: { Test: string[] }; Config: { User?: string } }
> {
  const json = await runOk("podman", ["image", "inspect", TEST_IMAGE]);
  return JSON.parse(json)[0];
}

/** The bytes `base`/`id` serves (asserting a 200). */
async function podBytes(base: string, id: string): Promise<Uint8Array> {
  const response = await fetch(`${base}/${id}`);
  assert.equal(response.status, 200);
  return new Uint8Array(await response.arrayBuffer());
}

Deno.test({
  name:
    "the image builds with buildah (docker format), keeps its HEALTHCHECK and holds only what serving loads",
  ignore,
  sanitizeResources: false,
  async fn() {
    assert.equal(missing, null, missing ?? "");
    const ms = await image();
    console.error(`image built in ${Math.round(ms / 1000)} s`);
    const config = await imageConfig();
    assert.equal(config.Config.User, "deno");
    assert.deepEqual(config.Healthcheck?.Test.slice(0, 3), [
      "CMD",
      "deno",
      "eval",
    ]);
    // DENO_DIR holds serve.lock's packages, not the tests' tools.
    const listing = await runOk("podman", [
      "run",
      "--rm",
      ...LIMITS,
      "--network",
      "none",
      "--entrypoint",
      "sh",
      TEST_IMAGE,
      "-c",
      "du -sk /deno-dir && ls /deno-dir/npm/registry.npmjs.org",
    ]);
    const [size, ...packages] = listing.trim().split("\n");
    const kib = Number(size!.split(/\s/)[0]);
    console.error(`DENO_DIR in the image: ${Math.round(kib / 1024)} MiB`);
    assert.ok(kib < 30 * 1024, `DENO_DIR is ${kib} KiB`);
    for (const name of ["ws", "srvx", "libsodium-wrappers", "postgres"]) {
      assert.ok(packages.includes(name), `${name} in ${packages}`);
    }
    for (
      const name of ["playwright-core", "typescript", "fast-check", "@mdn"]
    ) {
      assert.ok(!packages.includes(name), `${name} is not in the image`);
    }
  },
});

Deno.test({
  name:
    "the container serves as a non-root user, passes its HEALTHCHECK, refuses a 60 MB frame with 1009, and keeps pods on its volume across a restart",
  ignore,
  sanitizeResources: false,
  async fn() {
    assert.equal(missing, null, missing ?? "");
    await image();
    const volume = `pod-broker-test-${crypto.randomUUID().slice(0, 8)}`;
    await runOk("podman", ["volume", "create", volume]);
    try {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const options = { publish: port, volumes: [`${volume}:/data`] };
      let id: string;
      let pod: Uint8Array;
      {
        await using container = await startContainer(options);
        await waitForHealth(base, container);
        pod = await signedPod();
        const uploaded = await fetch(`${base}/pods`, {
          method: "POST",
          headers: { "Content-Type": "text/html" },
          body: pod as Uint8Array<ArrayBuffer>,
        });
        assert.equal(uploaded.status, 201);
        id = (await uploaded.json()).id;
        assert.deepEqual(await podBytes(base, id), pod);

        await assertNonRoot(container);
        const healthcheck = await run("podman", [
          "healthcheck",
          "run",
          container.name,
        ]);
        assert.equal(
          healthcheck.code,
          0,
          healthcheck.stdout + healthcheck.stderr,
        );

        // 60 MB: under the 64 MiB that Deno.upgradeWebSocket would read
        // whole before the broker saw the message.
        const size = 60_000_000;
        const { sent, closeCode } = await sendOversizedFrame(port, size);
        assert.equal(closeCode, 1009);
        assert.ok(sent < size, "the whole 60 MB was read before the refusal");
        assert.equal(await container.stop(), 0, await container.logs());
      }
      // A new container on the same volume serves the same pod.
      await using again = await startContainer(options);
      await waitForHealth(base, again);
      assert.deepEqual(await podBytes(base, id), pod);
    } finally {
      await run("podman", ["volume", "rm", "-f", volume]);
    }
  },
});

/** The broker (PID 1 in the container) runs as uid 1993, not root. */
async function assertNonRoot(container: Container): Promise<void> {
  const status = await container.exec(["cat", "/proc/1/status"]);
  assert.equal(status.code, 0, status.stderr);
  const uids = /^Uid:\s+(.*)$/m.exec(status.stdout)![1]!.split(/\s+/);
  assert.ok(uids.every((uid) => uid !== "0"), `uids ${uids}`);
  const cmdline = await container.exec(["cat", "/proc/1/cmdline"]);
  assert.match(cmdline.stdout, /^deno\0run\0/);
}

Deno.test({
  name:
    "the container reads POD_BROKER_TURN_SECRET, DATABASE_URL and REDIS_URL from its environment",
  ignore: ignore || (!inCi && !(havePostgres() && haveRedis())),
  sanitizeResources: false,
  async fn() {
    assert.equal(missing, null, missing ?? "");
    await image();
    await using services = await startEnvServices();
    const port = await freePort();
    await using container = await startContainer({
      hostNetwork: true,
      env: services.env,
      command: [
        ...services.flags,
        "--port",
        String(port),
        "--hostname",
        "127.0.0.1",
      ],
    });
    const base = `http://127.0.0.1:${port}`;
    await waitForHealth(base, container);
    await assertEnvBroker(base, services);
    const inspect = await runOk("podman", [
      "inspect",
      "--format",
      "{{json .Config.Cmd}}",
      container.name,
    ]);
    for (const value of Object.values(services.env)) {
      assert.ok(!inspect.includes(value), "no secret in the command line");
    }
    assert.equal(await container.stop(), 0, await container.logs());
  },
});
