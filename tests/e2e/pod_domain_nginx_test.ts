// The nginx block of the README's "An origin per pod", run as written (names,
// port, certificate paths and upstream substituted) by Debian's nginx in the
// foreground on loopback, in front of a broker with a pod domain: a pod host
// reaches the broker with its Host, over TLS with a wildcard certificate, and
// the broker host still answers as itself. In CI a missing nginx or openssl
// fails the test; elsewhere it is skipped with a loud notice.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { Buffer } from "node:buffer";
import { request } from "node:https";
import { freePort, waitForPort } from "../contract/_support.ts";
import { signedPod, startServer, upload } from "../support/helpers.ts";

const NGINX = "/usr/sbin/nginx";
const OPENSSL = "/usr/bin/openssl";
const have = existsSync(NGINX) && existsSync(OPENSSL);
const inCi = Boolean(Deno.env.get("CI"));
if (!have) {
  console.error(
    `\n!!! ${NGINX} or ${OPENSSL} is missing: the README's nginx block test ${
      inCi ? "FAILS in CI" : "is SKIPPED"
    }.\n!!! Install them: sudo apt-get install -y nginx-light openssl\n`,
  );
}

/** The nginx block of README.md ("An origin per pod"). */
async function readmeNginxBlock(): Promise<string> {
  const readme = await Deno.readTextFile(
    new URL("../../README.md", import.meta.url),
  );
  const section = readme.slice(readme.indexOf("## An origin per pod"));
  const block = /```nginx\n([\s\S]*?)```/.exec(section);
  assert.ok(block, "README.md has no nginx block in 'An origin per pod'");
  return block[1]!;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * GET over TLS to 127.0.0.1:`port`, naming `host` in SNI and Host, with
 * `headers` too.
 */
function get(
  port: number,
  host: string,
  path: string,
  ca: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: "127.0.0.1",
      port,
      path,
      servername: host,
      ca,
      headers: { ...headers, Host: `${host}:${port}` },
      agent: false,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/** Lowercase base32 of an id's bytes, from the broker's own `podUrl`. */
function labelOf(podUrl: string): string {
  return new URL(podUrl).hostname.split(".")[0]!;
}

Deno.test({
  name:
    "the README's nginx block for a pod domain passes a pod host's Host to the broker over TLS",
  ignore: !have && !inCi,
  async fn() {
    assert.ok(have, `${NGINX} or ${OPENSSL} is missing`);
    const dir = await Deno.makeTempDir({ prefix: "pod-domain-nginx-" });
    // nginx's workers may run as another user: they read the temp dirs.
    await Deno.chmod(dir, 0o755);
    // trustProxy as well: whatever the block passes on as X-Forwarded-Host
    // must not make the broker host a pod host.
    await using broker = await startServer({
      podDomain: "pods.test",
      baseUrl: "https://broker.test",
      trustProxy: true,
    });
    let nginx: Deno.ChildProcess | undefined;
    try {
      const cert = `${dir}/fullchain.pem`;
      const key = `${dir}/privkey.pem`;
      const made = await new Deno.Command(OPENSSL, {
        args: [
          "req",
          "-x509",
          "-newkey",
          "ec",
          "-pkeyopt",
          "ec_paramgen_curve:prime256v1",
          "-nodes",
          "-days",
          "1",
          "-subj",
          "/CN=broker.test",
          "-addext",
          "subjectAltName=DNS:broker.test,DNS:*.pods.test",
          "-keyout",
          key,
          "-out",
          cert,
        ],
        stdout: "null",
        stderr: "piped",
      }).output();
      assert.equal(made.code, 0, new TextDecoder().decode(made.stderr));
      await Deno.chmod(key, 0o644);
      const port = await freePort();
      const block = (await readmeNginxBlock())
        .replaceAll("broker.example.com", "broker.test")
        .replaceAll("example-pods.net", "pods.test")
        .replace("listen 443 ssl;", `listen 127.0.0.1:${port} ssl;`)
        .replace(/ssl_certificate\s+\S+;/, `ssl_certificate ${cert};`)
        .replace(/ssl_certificate_key\s+\S+;/, `ssl_certificate_key ${key};`)
        .replace("http://127.0.0.1:8080", broker.url);
      assert.ok(block.includes(`listen 127.0.0.1:${port} ssl;`), block);
      assert.ok(block.includes(broker.url), block);
      const temp = (name: string) => `${name}_temp_path ${dir}/${name};`;
      await Deno.writeTextFile(
        `${dir}/nginx.conf`,
        [
          `pid ${dir}/nginx.pid;`,
          "error_log stderr warn;",
          "worker_processes 1;",
          "events { worker_connections 64; }",
          "http {",
          "access_log off;",
          ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map(temp),
          block,
          "}",
        ].join("\n"),
      );
      nginx = new Deno.Command(NGINX, {
        args: ["-p", dir, "-c", `${dir}/nginx.conf`, "-g", "daemon off;"],
        stdin: "null",
        stdout: "null",
        stderr: "inherit",
      }).spawn();
      await waitForPort(port, "nginx");

      const created = await (await upload(
        broker.url,
        await signedPod() as BodyInit,
      )).json();
      assert.match(created.podUrl, /^https:\/\/[a-z2-7]{20}\.pods\.test\/$/);
      const ca = await Deno.readTextFile(cert);
      const podHost = `${labelOf(created.podUrl)}.pods.test`;
      const pod = await get(port, podHost, "/", ca);
      assert.equal(pod.status, 200, pod.body);
      assert.match(pod.body, /Test pod/);
      const policies = String(pod.headers["content-security-policy"]);
      assert.match(policies, /allow-same-origin/);
      assert.ok(policies.includes(`wss://${podHost}/signal`), policies);
      // The same path on the broker host is the broker's: a redirect.
      const moved = await get(port, "broker.test", `/${created.id}`, ca);
      assert.equal(moved.status, 302);
      assert.equal(moved.headers["location"], created.podUrl);
      // And the broker's routes are not a pod host's.
      assert.equal((await get(port, podHost, "/health", ca)).status, 404);
      assert.equal((await get(port, "broker.test", "/health", ca)).status, 200);
      // A client's X-Forwarded-Host does not turn the broker host into a
      // pod host (with allow-same-origin at the broker's origin).
      const forged = await get(port, "broker.test", "/", ca, {
        "X-Forwarded-Host": podHost,
      });
      assert.equal(forged.status, 404, forged.body);
      assert.doesNotMatch(
        String(forged.headers["content-security-policy"]),
        /allow-same-origin/,
      );
    } finally {
      if (nginx !== undefined) {
        nginx.kill("SIGQUIT");
        await nginx.status;
      }
      await Deno.remove(dir, { recursive: true });
    }
  },
});
