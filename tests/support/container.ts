// The container for real: the base image's stand-in (scripts/base_image.sh),
// the image built from the Dockerfile with buildah (docker format, so the
// HEALTHCHECK is kept), and containers run with podman, rootful, their
// ports published on 127.0.0.1 only (slirp4netns: no bridge, no traffic
// off loopback) or on the host's network.
import { existsSync } from "node:fs";

const ROOT = new URL("../..", import.meta.url).pathname;

/** The image the tests build (a local name: nothing is pushed). */
export const TEST_IMAGE = "localhost/pod-broker:test";

/**
 * Limits every container gets. Podman's defaults (1,048,576 open files)
 * need CAP_SYS_RESOURCE, which a sandboxed root may not have; these fit
 * under any host's and are ample for a test.
 */
export const LIMITS: readonly string[] = [
  "--ulimit",
  "nofile=16384:16384",
  "--ulimit",
  "nproc=4096:4096",
];

/** What a finished command printed. */
export interface Output {
  /** Exit code. */
  code: number;
  /** Standard output. */
  stdout: string;
  /** Standard error. */
  stderr: string;
}

/** Runs `program args` to the end, with `env` added to the environment. */
export async function run(
  program: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<Output> {
  const { code, stdout, stderr } = await new Deno.Command(program, {
    args,
    cwd: ROOT,
    env,
    stdin: "null",
  }).output();
  const text = new TextDecoder();
  return { code, stdout: text.decode(stdout), stderr: text.decode(stderr) };
}

/** `run`, failing with the command's output unless it exits 0. */
export async function runOk(
  program: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<string> {
  const out = await run(program, args, env);
  if (out.code !== 0) {
    throw new Error(
      `${program} ${args.join(" ")} exited ${out.code}:\n${
        out.stderr.slice(-3000)
      }`,
    );
  }
  return out.stdout;
}

/**
 * Why the container tests cannot run here, or null when they can: buildah,
 * podman and debootstrap installed, and root (the stand-in base image is a
 * debootstrap root filesystem).
 */
export function containerToolsMissing(): string | null {
  const missing = ["buildah", "podman", "debootstrap", "slirp4netns"].filter(
    (tool) =>
      ![`/usr/bin/${tool}`, `/usr/sbin/${tool}`].some((path) =>
        existsSync(path)
      ),
  );
  if (missing.length > 0) return `${missing.join(", ")} not installed`;
  if (Deno.uid() !== 0) return "not root (podman rootful, debootstrap)";
  return null;
}

/**
 * The CAs this host trusts (a proxy's own CA among them, where one is in
 * the way), for the image's install step: the environment's, else Debian's
 * bundle. Given as a build secret, it is not kept in the image.
 */
function caBundle(): string | null {
  const paths = [
    Deno.env.get("DENO_CERT"),
    Deno.env.get("SSL_CERT_FILE"),
    "/etc/ssl/certs/ca-certificates.crt",
  ];
  return paths.find((path) => path && existsSync(path)) ?? null;
}

/**
 * Makes the base image (its stand-in, unless local storage has it) and
 * builds TEST_IMAGE from the Dockerfile; the previous TEST_IMAGE is removed
 * by its id.
 *
 * @returns The build's output.
 */
export async function buildImage(): Promise<string> {
  await runOk("bash", ["scripts/base_image.sh"]);
  const before = await run("podman", [
    "image",
    "inspect",
    "--format",
    "{{.Id}}",
    TEST_IMAGE,
  ]);
  const ca = caBundle();
  const output = await runOk("buildah", [
    "bud",
    "--format",
    "docker",
    "--layers=false",
    ...(ca ? ["--secret", `id=deno_cert,src=${ca}`] : []),
    "-t",
    TEST_IMAGE,
    ".",
  ]);
  const old = before.stdout.trim();
  if (before.code === 0 && old !== "") {
    const now = await runOk("podman", [
      "image",
      "inspect",
      "--format",
      "{{.Id}}",
      TEST_IMAGE,
    ]);
    if (now.trim() !== old) await run("podman", ["rmi", old]);
  }
  return output;
}

/** A running container, removed (with its anonymous volumes) on dispose. */
export interface Container extends AsyncDisposable {
  /** Its name. */
  name: string;
  /** `podman exec NAME ARGS`. */
  exec(args: string[]): Promise<Output>;
  /** `podman stop` (SIGTERM, then SIGKILL after 10 s); its exit code. */
  stop(): Promise<number>;
  /** Everything it logged so far. */
  logs(): Promise<string>;
}

/** Options of {@linkcode startContainer}. */
export interface ContainerOptions {
  /** A 127.0.0.1 port to publish the container's 8080 on. */
  publish?: number;
  /** Use the host's network (the broker's own --port then). */
  hostNetwork?: boolean;
  /** `-v` values. */
  volumes?: string[];
  /** Variables passed by name (`-e NAME`): their values never reach argv. */
  env?: Record<string, string>;
  /** Arguments after the image (replacing CMD). */
  command?: string[];
}

/** Starts TEST_IMAGE detached. */
export async function startContainer(
  options: ContainerOptions,
): Promise<Container> {
  const name = `pod-broker-test-${crypto.randomUUID().slice(0, 8)}`;
  const network = options.hostNetwork ? ["--network", "host"] : [
    "--network",
    "slirp4netns:port_handler=slirp4netns",
    "-p",
    `127.0.0.1:${options.publish}:8080`,
  ];
  const env = options.env ?? {};
  await runOk("podman", [
    "run",
    "-d",
    "--name",
    name,
    ...LIMITS,
    ...network,
    ...(options.volumes ?? []).flatMap((volume) => ["-v", volume]),
    ...Object.keys(env).flatMap((key) => ["-e", key]),
    TEST_IMAGE,
    ...(options.command ?? []),
  ], env);
  let stopped: Promise<number> | undefined;
  const stop = () =>
    stopped ??= (async () => {
      await run("podman", ["stop", "-t", "10", name]);
      const code = await runOk("podman", [
        "inspect",
        "--format",
        "{{.State.ExitCode}}",
        name,
      ]);
      return Number(code.trim());
    })();
  return {
    name,
    exec: (args) => run("podman", ["exec", name, ...args]),
    stop,
    logs: async () => {
      const out = await run("podman", ["logs", name]);
      return out.stdout + out.stderr;
    },
    [Symbol.asyncDispose]: async () => {
      await stop();
      await run("podman", ["rm", "-f", "-v", name]);
    },
  };
}

/** Waits (30 s at most) until `base`/health answers 200. */
export async function waitForHealth(
  base: string,
  container: Container,
): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${base}/health`);
      await response.body?.cancel();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${base} never became healthy:\n${await container.logs()}`);
}
