// `pod-broker dev`: the folder's pod, served by the broker's own code with
// exactly the headers a broker sends (on a pod origin, and with --opaque on
// the broker's host), rebuilt on save, a build error shown in the terminal
// and as the page. The browser half (tabs reload, two tabs talk) is
// tests/e2e/dev_test.ts.
import assert from "node:assert/strict";
import { readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { strToU8, unzipSync, zipSync } from "fflate";
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
    }': no such page (dev takes ENTRY.html, APP.xdc, or a folder with index.html) (see --help)\n`,
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

const POLL = "/work/shared/webxdc/poll.xdc";

Deno.test("dev APP.xdc serves the app built as import builds it, named by its manifest, and rebuilds when the file is packed again", async () => {
  await using temp = await tempDir("pod-dev-");
  const app = join(temp.path, "poll.xdc");
  const files = unzipSync(await readFile(POLL));
  await writeFile(app, zipSync(files));
  await using dev = await startDev([app]);
  const url = dev.url.replace(/#dev$/, "");
  assert.match(url, /^http:\/\/[a-z2-7]{20}\.localhost:\d+\/$/);
  const served = await get(url);
  assert.equal(served.status, 200);
  const { manifest } = await verifyPod(served.body);
  assert.equal(manifest.name, "Poll");
  const html = new TextDecoder().decode(served.body);
  assert.match(html, /sendUpdateMaxSize/, "the webxdc runtime");
  assert.doesNotMatch(html, /src="webxdc\.js"/);
  assert.match(html, /checkForUpdate|pod-broker dev/, "the reload module");
  assert.match(
    served.headers["content-security-policy"]!,
    /connect-src[^;]*data: blob:/,
  );

  // Packed again (written beside it and moved over it, as packers do).
  const page = new TextDecoder().decode(files["index.html"]!);
  files["index.html"] = strToU8(
    page.replace("<body>", "<body><p>Packed again</p>"),
  );
  assert.notEqual(new TextDecoder().decode(files["index.html"]), page);
  await writeFile(`${app}.tmp`, zipSync(files));
  await rename(`${app}.tmp`, app);
  await dev.waitFor(/built in \d+ ms[^]*built in \d+ ms/);
  const again = new TextDecoder().decode((await get(url)).body);
  assert.match(again, /<p>Packed again<\/p>/);
  assert.equal(await dev.stop(), 0);
});

Deno.test("dev APP.xdc: a bundle import refuses is refused at the start with import's line and exit 2", async () => {
  await using temp = await tempDir("pod-dev-");
  const bundles: Record<string, Uint8Array> = {
    "text.xdc": strToU8("<!doctype html>not a zip"),
    "empty.xdc": zipSync({ "manifest.toml": strToU8("name = 'x'") }),
  };
  for (const [name, bytes] of Object.entries(bundles)) {
    const path = join(temp.path, name);
    await writeFile(path, bytes);
    const imported = await runCli(["import", path]);
    const served = await runCli(["dev", path, "--port", "0"]);
    assert.equal(served.code, 2, served.stderr);
    assert.equal(served.stdout, "");
    assert.equal(served.stderr, imported.stderr);
    assert.equal(served.stderr.trimEnd().split("\n").length, 1);
  }
});
