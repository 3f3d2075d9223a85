// `pod-broker dev`: the folder's pod, served by the broker's own code with
// exactly the headers a broker sends (on a pod origin, and with --opaque on
// the broker's host), rebuilt on save, a build error shown in the terminal
// and as the page. The browser half (tabs reload, two tabs talk) is
// tests/e2e/dev_test.ts.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { verifyPod } from "../../src/pod/verify.ts";
import { runCli, startDev } from "../support/dev_process.ts";
import { startServer, upload } from "../support/helpers.ts";
import { tempDir } from "../contract/_servers.ts";
import { requestWithHost } from "../support/host_request.ts";

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

/** GET `url` from 127.0.0.1, with the URL's host as the Host header. */
async function get(url: string): Promise<Answer> {
  const { port, host, pathname } = new URL(url);
  const answer = await requestWithHost(Number(port), host, pathname);
  return {
    status: answer.status,
    headers: Object.fromEntries(
      Object.entries(answer.headers).map((
        [name, value],
      ) => [name, [value ?? ""].flat().join("\n")]),
    ),
    body: answer.bytes,
  };
}

/** Headers with the pod's host (and id) written as HOST, the date left out. */
function normalized(answer: Answer, url: string): Record<string, string> {
  const { host, pathname } = new URL(url);
  const id = pathname.slice(1);
  const headers = { ...answer.headers };
  delete headers.date;
  for (const [name, value] of Object.entries(headers)) {
    headers[name] = value.replaceAll(host, "HOST").replaceAll(
      id || "\0",
      "ID",
    );
  }
  return headers;
}

/** A fresh pod folder made by `init`, its key under `config`. */
async function podFolder(root: string) {
  const env = { XDG_CONFIG_HOME: join(root, "config") };
  const dir = join(root, "pod");
  const made = await runCli(["init", dir], env);
  assert.equal(made.code, 0, made.stderr);
  return { dir, env };
}

Deno.test("dev serves the folder's pod with exactly the headers a broker sends, on a pod origin and with --opaque", async () => {
  await using temp = await tempDir("pod-dev-");
  const { dir, env } = await podFolder(temp.path);
  for (const opaque of [false, true]) {
    await using dev = await startDev(opaque ? [dir, "--opaque"] : [dir], env);
    const url = dev.url.replace(/#dev$/, "");
    assert.match(
      url,
      opaque
        ? /^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9]{12}$/
        : /^http:\/\/[a-z2-7]{20}\.localhost:\d+\/$/,
    );
    assert.match(dev.url, /#dev$/);
    const served = await get(url);
    assert.equal(served.status, 200);
    const { manifest } = await verifyPod(served.body);
    const settings = JSON.parse(await readFile(join(dir, "deno.json"), "utf8"));
    assert.equal(manifest.name, settings.pod.name);
    // Never the author's key: the page could read what it signed.
    assert.match(dev.stderr(), /signed with a throwaway key/);

    // The same bytes, published on a broker of the same kind.
    await using broker = await startServer(
      opaque ? {} : { podDomain: "localhost" },
    );
    const uploaded = await upload(broker.url, served.body as BodyInit);
    assert.equal(uploaded.status, 201);
    const envelope = await uploaded.json();
    const publishedUrl = opaque ? envelope.url : envelope.podUrl;
    const published = await get(publishedUrl);
    assert.equal(published.status, 200);
    assert.deepEqual(
      normalized(served, url),
      normalized(published, publishedUrl),
    );
    assert.equal(
      /allow-same-origin/.test(served.headers["content-security-policy"]!),
      !opaque,
    );
    assert.equal(await dev.stop(), 0);
  }
});

Deno.test("dev rebuilds on save; a build error shows in the terminal and as the page, until it is fixed", async () => {
  await using temp = await tempDir("pod-dev-");
  const { dir, env } = await podFolder(temp.path);
  await using dev = await startDev([dir], env);
  const url = dev.url.replace(/#dev$/, "");
  const page = () => get(url).then((a) => new TextDecoder().decode(a.body));
  const builds = () => dev.stderr().match(/built in \d+ ms/g)?.length ?? 0;
  assert.equal(builds(), 1);

  const html = await readFile(join(dir, "index.html"), "utf8");
  await writeFile(
    join(dir, "index.html"),
    html.replace("<h1>pod</h1>", "<h1>Edited title</h1>"),
  );
  await dev.waitFor(/built in \d+ ms[^]*built in \d+ ms/);
  assert.match(await page(), /<h1>Edited title<\/h1>/);

  const app = await readFile(join(dir, "app.ts"), "utf8");
  await writeFile(join(dir, "app.ts"), `import "./missing.ts";\n${app}`);
  await dev.waitFor(/error: app\.ts:1: Could not resolve "\.\/missing\.ts"/);
  await dev.waitFor(/the build failed \(1 problem\(s\)\); the page shows them/);
  const broken = await page();
  assert.match(
    broken,
    /<pre id="pod-broker-dev-error">app\.ts:1: Could not resolve &#34;\.\/missing\.ts&#34;<\/pre>/,
  );
  await verifyPod(new TextEncoder().encode(broken));

  await writeFile(join(dir, "app.ts"), app);
  await dev.waitFor(/the page shows them\n[^]*built in \d+ ms/);
  const fixed = await page();
  assert.match(fixed, /<h1>Edited title<\/h1>/);
  assert.doesNotMatch(fixed, /pod-broker-dev-error/);
  assert.equal(await dev.stop(), 0);
  assert.match(dev.stderr(), /stopped \(SIGTERM\)\n$/);
});

Deno.test("dev refuses a missing page and a bad port, with one line and exit 2", async () => {
  await using temp = await tempDir("pod-dev-");
  const missing = await runCli(["dev", join(temp.path, "nothing")]);
  assert.deepEqual(missing, {
    code: 2,
    stdout: "",
    stderr: `pod-broker: Cannot serve '${
      join(temp.path, "nothing")
    }': no such page (dev takes ENTRY.html, or a folder with index.html) (see --help)\n`,
  });
  const { dir, env } = await podFolder(temp.path);
  const port = await runCli(["dev", dir, "--port", "http"], env);
  assert.deepEqual(port, {
    code: 2,
    stdout: "",
    stderr:
      "pod-broker: Cannot use --port 'http': not a port number (see --help)\n",
  });
});
