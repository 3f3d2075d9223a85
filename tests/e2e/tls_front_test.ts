// The TLS fronts of docs/operators/proxy.md, run as written: the broker's
// command, the nginx configuration and the Caddyfile are taken from the page
// (names, ports, certificate paths and the data folder substituted) and run
// on loopback with a certificate from a private CA, by Debian's nginx and
// Caddy in the foreground. Through each front: an upload over TLS whose links
// keep the front's non-default port, a client's own X-Forwarded-Host
// ignored, the broker's front page with HSTS, a pod on its own origin (and
// the 302 to it), and WebSocket signaling on the broker's host and on a pod's.
// Then `publish` to the front: a certificate error is told apart from "is the
// broker running?", names DENO_CERT and --cert, and both work. In CI a
// missing nginx, Caddy or openssl fails the test; elsewhere it is skipped
// with a loud notice.
import assert from "node:assert/strict";
import { gatedTest, inCi } from "../support/gated.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import WebSocket from "ws";
import { freePort, waitForPort } from "../support/ports.ts";
import { nextEmit } from "../support/wait.ts";
import {
  type HostAnswer,
  type HostRequestInit,
  requestWithHost,
} from "../support/host_request.ts";
import { MOD, runCommand, signedPod, spawnBroker } from "../support/helpers.ts";
import { blocksRunBy, ROOT } from "../support/doc_blocks.ts";
import { OPENSSL, testCertificates } from "../support/tls.ts";
import { NGINX, nginxMain } from "../support/nginx.ts";

const PAGE = "docs/operators/proxy.md";
const CADDY = "/usr/bin/caddy";
for (
  const [tool, pkg] of [[NGINX, "nginx-light"], [CADDY, "caddy"], [
    OPENSSL,
    "openssl",
  ]]
) {
  if (!existsSync(tool!)) {
    console.error(
      `\n!!! ${tool} is missing: the TLS front tests that need it ${
        inCi ? "FAIL in CI" : "are SKIPPED"
      }.\n!!! Install it: sudo apt-get install -y ${pkg}\n`,
    );
  }
}

/** The names of the page, and the test's own. */
const NAMES: [string, string][] = [
  ["broker.example.com", "localhost"],
  ["example-pods.net", "pods.test"],
];

function rename(text: string): string {
  return NAMES.reduce((out, [from, to]) => out.replaceAll(from, to), text);
}

/** A private CA and a certificate it signed for localhost and *.pods.test. */
async function privateCa(dir: string) {
  const { caFile, certFile, keyFile } = await testCertificates(
    dir,
    "localhost",
    "DNS:localhost,DNS:*.pods.test",
  );
  // nginx's workers may run as another user: they read these.
  for (const file of [certFile, keyFile]) await Deno.chmod(file, 0o644);
  return {
    ca: await Deno.readTextFile(caFile),
    caFile,
    cert: certFile,
    key: keyFile,
  };
}

/** The broker of the page, started as written on a free port. */
async function startDocumentedBroker(dir: string) {
  const [block] = await blocksRunBy(PAGE, "sh", import.meta.url);
  const args = rename(block!.text).replace(/\\\n/g, " ").trim().split(/\s+/);
  assert.equal(args.shift(), "pod-broker");
  const at = (flag: string) => args.indexOf(flag) + 1;
  assert.equal(args[at("--port")], "8080");
  args[at("--port")] = "0";
  args[at("--data-dir")] = join(dir, "data");
  assert.ok(args.includes("--trust-proxy"));
  return await spawnBroker(["run", "-A", MOD, ...args], ROOT);
}

type Answer = HostAnswer;

/** One request over TLS to 127.0.0.1:`port`, naming `host` in SNI and Host. */
function send(
  port: number,
  host: string,
  path: string,
  ca: string,
  init: Omit<HostRequestInit, "tls"> = {},
): Promise<Answer> {
  const tls = { ca, servername: host };
  return requestWithHost(port, `${host}:${port}`, path, { ...init, tls });
}

/** A WebSocket over TLS that collects its frames. */
async function signalingSocket(port: number, host: string, ca: string) {
  // ws passes `servername` on to tls.connect (its types do not list it).
  const options = {
    ca,
    servername: host,
    headers: { Host: `${host}:${port}` },
  } as WebSocket.ClientOptions;
  const socket = new WebSocket(`wss://127.0.0.1:${port}/signal`, options);
  const frames: Record<string, unknown>[] = [];
  socket.on("message", (data) => frames.push(JSON.parse(String(data))));
  await nextEmit(socket, "open", "the signaling socket through the front");
  const next = async (type: string) => {
    for (let i = 0; i < 500; i++) {
      const at = frames.findIndex((frame) => frame.type === type);
      if (at !== -1) return frames.splice(at, 1)[0]!;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`no ${type} frame: ${JSON.stringify(frames)}`);
  };
  const close = async () => {
    const closed = nextEmit(socket, "close", "the signaling socket to close");
    socket.close();
    await closed;
  };
  return { socket, next, close };
}

/** What every front must do, on port `port` with the broker behind it. */
async function checkFront(port: number, ca: string): Promise<void> {
  const origin = `https://localhost:${port}`;
  const pod = await signedPod() as Uint8Array;
  const uploaded = await send(port, "localhost", "/pods", ca, {
    method: "POST",
    headers: {
      "Content-Type": "text/html",
      // A client's own value: the front must replace it.
      "X-Forwarded-Host": "evil.example",
      "X-Forwarded-Proto": "http",
    },
    body: pod,
  });
  assert.equal(uploaded.status, 201, uploaded.body);
  const created = JSON.parse(uploaded.body);
  assert.equal(created.url, `${origin}/${created.id}`, "the port is kept");
  assert.match(
    created.podUrl,
    new RegExp(`^https://[a-z2-7]{20}\\.pods\\.test:${port}/$`),
  );
  const podHost = new URL(created.podUrl).hostname;

  // The broker's host: its front page, HSTS, and the redirect to the pod.
  const front = await send(port, "localhost", "/", ca);
  assert.equal(front.status, 200);
  assert.match(front.body, /pod-broker \d/);
  assert.match(String(front.headers["strict-transport-security"]), /max-age/);
  const health = await send(port, "localhost", "/health", ca);
  assert.equal(JSON.parse(health.body).status, "ok");
  const moved = await send(port, "localhost", `/${created.id}`, ca);
  assert.equal(moved.status, 302);
  assert.equal(moved.headers["location"], created.podUrl);

  // The pod's own origin.
  const served = await send(port, podHost, "/", ca);
  assert.equal(served.status, 200);
  assert.equal(served.body, new TextDecoder().decode(pod));
  const policies = String(served.headers["content-security-policy"]);
  assert.match(policies, /allow-same-origin/);
  assert.ok(
    policies.includes(
      `https://${podHost}:${port} wss://${podHost}:${port} data: blob:;`,
    ),
    policies,
  );
  assert.equal((await send(port, podHost, "/health", ca)).status, 404);

  // Signaling through the front, on the broker's host and on the pod's.
  const a = await signalingSocket(port, "localhost", ca);
  const b = await signalingSocket(port, podHost, ca);
  try {
    a.socket.send(JSON.stringify({ type: "join", session: "tls-front" }));
    const joinedA = await a.next("joined");
    b.socket.send(JSON.stringify({ type: "join", session: "tls-front" }));
    const joinedB = await b.next("joined");
    assert.deepEqual(joinedB.peers, [joinedA.peerId]);
    assert.equal((await a.next("peer-joined")).peerId, joinedB.peerId);
    const data = { sdp: { type: "offer", sdp: "v=0\r\n" } };
    b.socket.send(
      JSON.stringify({ type: "signal", to: joinedA.peerId, data }),
    );
    const signal = await a.next("signal");
    assert.equal(signal.from, joinedB.peerId);
    assert.deepEqual(signal.data, data);
  } finally {
    await a.close();
    await b.close();
  }
}

/** Runs `deno run ARGS` to its end. */
function deno(args: string[], env: Record<string, string> = {}) {
  return runCommand(Deno.execPath(), args, { cwd: ROOT, env });
}

/** publish through the front: refused with the page's words, then trusted. */
async function checkPublish(port: number, caFile: string, dir: string) {
  const page = join(dir, "page.html");
  await Deno.writeTextFile(page, "<!doctype html><title>p</title><p>hi</p>");
  const broker = `https://localhost:${port}`;
  const publish = ["run", "-A", MOD, "publish", "--broker", broker, page];
  const refused = await deno(publish);
  assert.equal(refused.code, 2, refused.stderr);
  const [documented] = await blocksRunBy(PAGE, "text", import.meta.url);
  assert.equal(
    refused.stderr,
    documented!.text.replace("https://broker.internal", broker),
  );
  const trusted = /^https:\/\/localhost:\d+\/[A-Za-z0-9]{12}\n$/;
  const withFlag = await deno([
    "run",
    "-A",
    "--cert",
    caFile,
    ...publish.slice(2),
  ]);
  assert.equal(withFlag.code, 0, withFlag.stderr);
  assert.match(withFlag.stdout, trusted);
  assert.ok(withFlag.stdout.startsWith(`${broker}/`));
  const withEnv = await deno(publish, { DENO_CERT: caFile });
  assert.equal(withEnv.code, 0, withEnv.stderr);
  assert.match(withEnv.stdout, trusted);
}

/** The nginx configuration of the page, for this test's ports and files. */
async function nginxConfig(
  dir: string,
  ports: { http: number; tls: number; broker: number },
  files: { cert: string; key: string },
): Promise<string> {
  const [block] = await blocksRunBy(PAGE, "nginx", import.meta.url);
  const config = rename(block!.text)
    .replace("listen 80;", `listen 127.0.0.1:${ports.http};`)
    .replaceAll(/listen 443 ssl/g, `listen 127.0.0.1:${ports.tls} ssl`)
    .replace(/ssl_certificate\s+\S+;/, `ssl_certificate ${files.cert};`)
    .replace(/ssl_certificate_key\s+\S+;/, `ssl_certificate_key ${files.key};`)
    .replaceAll("http://127.0.0.1:8080", `http://127.0.0.1:${ports.broker}`);
  assert.doesNotMatch(config, /listen (80|443)\b|:8080|example/);
  return nginxMain(dir, config);
}

/** The Caddyfile of the page, for this test's ports and files. */
async function caddyfile(
  ports: { http: number; tls: number; broker: number },
  files: { cert: string; key: string },
): Promise<string> {
  const [block] = await blocksRunBy(PAGE, "caddyfile", import.meta.url);
  const config = rename(block!.text)
    .replace(
      /^\ttls \S+ \S+$/m,
      `\ttls ${files.cert} ${files.key}`,
    )
    .replace(
      "\tadmin off\n",
      // Loopback ports; and never the machine's trust store: Caddy would add
      // its own local CA there, since the test's names include localhost.
      `\tadmin off\n\thttp_port ${ports.http}\n\thttps_port ${ports.tls}\n\tdefault_bind 127.0.0.1\n\tskip_install_trust\n`,
    )
    .replaceAll("127.0.0.1:8080", `127.0.0.1:${ports.broker}`);
  assert.match(config, new RegExp(`https_port ${ports.tls}`));
  assert.ok(config.includes(`tls ${files.cert} ${files.key}`), config);
  assert.doesNotMatch(config, /:8080|example/);
  return config;
}

/** Runs `fn` with a broker behind a front that `start` spawns. */
async function withFront(
  name: string,
  start: (
    dir: string,
    ports: { http: number; tls: number; broker: number },
    files: { cert: string; key: string },
  ) => Promise<Deno.ChildProcess>,
  check: (
    port: number,
    ca: string,
    caFile: string,
    dir: string,
  ) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: `tls-front-${name}-` });
  await Deno.chmod(dir, 0o755);
  let front: Deno.ChildProcess | undefined;
  try {
    const certs = await privateCa(dir);
    await using broker = await startDocumentedBroker(dir);
    const ports = {
      http: await freePort(),
      tls: await freePort(),
      broker: broker.port,
    };
    front = await start(dir, ports, certs);
    await waitForPort(ports.tls, name);
    await check(ports.tls, certs.ca, certs.caFile, dir);
  } finally {
    if (front !== undefined) {
      front.kill("SIGTERM");
      await front.status;
    }
    await Deno.remove(dir, { recursive: true });
  }
}

gatedTest(
  "nginx as docs/operators/proxy.md configures it: TLS upload with the port kept, pod domain, signaling, publish with a private CA",
  existsSync(NGINX) && existsSync(OPENSSL),
  `${NGINX} and ${OPENSSL} are needed: apt-get install -y nginx openssl`,
  async () => {
    await withFront("nginx", async (dir, ports, files) => {
      await Deno.writeTextFile(
        `${dir}/nginx.conf`,
        await nginxConfig(dir, ports, files),
      );
      return new Deno.Command(NGINX, {
        args: ["-p", dir, "-c", `${dir}/nginx.conf`, "-g", "daemon off;"],
        stdin: "null",
        stdout: "null",
        stderr: "inherit",
      }).spawn();
    }, async (port, ca, caFile, dir) => {
      await checkFront(port, ca);
      await checkPublish(port, caFile, dir);
    });
  },
);

gatedTest(
  "Caddy as docs/operators/proxy.md configures it: TLS upload with the port kept, pod domain, signaling",
  existsSync(CADDY) && existsSync(OPENSSL),
  `${CADDY} and ${OPENSSL} are needed (Caddy, openssl)`,
  async () => {
    await withFront("caddy", async (dir, ports, files) => {
      await Deno.writeTextFile(
        `${dir}/Caddyfile`,
        await caddyfile(ports, files),
      );
      return new Deno.Command(CADDY, {
        args: ["run", "--config", `${dir}/Caddyfile`, "--adapter", "caddyfile"],
        // Caddy keeps its state under HOME and the XDG folders: the test's.
        env: {
          HOME: dir,
          XDG_DATA_HOME: `${dir}/data-home`,
          XDG_CONFIG_HOME: `${dir}/config-home`,
        },
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).spawn();
    }, async (port, ca) => {
      await checkFront(port, ca);
    });
  },
);
