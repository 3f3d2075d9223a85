// A real coturn accepts the TURN credentials the broker hands out in
// `joined`, and refuses them once they expire (issue 9).
import assert from "node:assert/strict";
import { gatedTest } from "../support/gated.ts";
import {
  allocate,
  type Coturn,
  haveCoturn,
  startCoturn,
} from "../support/coturn.ts";
import { freePort } from "../support/ports.ts";
import {
  ANY_LOCAL_PORT,
  MOD,
  spawnBroker,
  startServer,
} from "../support/helpers.ts";
import { blocksRunBy } from "../support/doc_blocks.ts";
import { type Frame, TestClient } from "../support/ws.ts";

const have = haveCoturn();

/** The TURN entry of a `joined` or `ice` frame. */
function turnEntry(frame: Frame): { username: string; credential: string } {
  const entry = frame.iceServers.find((server: Frame) =>
    [server.urls].flat().some((url: string) => url.startsWith("turn:"))
  );
  assert.ok(entry, JSON.stringify(frame));
  return entry;
}

/** A test that needs coturn. */
function coturnTest(name: string, fn: () => Promise<void>): void {
  gatedTest(name, have, "coturn is missing: apt-get install -y coturn", fn);
}

/** coturn on loopback with `secret`, relaying to loopback peers. */
function loopbackCoturn(secret: string): Promise<Coturn> {
  return startCoturn({ secret, allowLoopbackPeers: true });
}

coturnTest(
  "coturn allocates with the credentials of a real joined frame from the CLI broker set up as docs/operators/turn.md says",
  async () => {
    const secret = `secret-${crypto.randomUUID()}`;
    await using coturn = await loopbackCoturn(secret);
    // The operator's way: the same secret in a 0600 file, never in argv.
    const dir = await Deno.makeTempDir({ prefix: "turn-secret-" });
    try {
      const secretFile = `${dir}/turn-secret`;
      await Deno.writeTextFile(secretFile, `${secret}\n`, { mode: 0o600 });
      const turnUrl = `turn:127.0.0.1:${coturn.port}?transport=udp`;
      await using broker = await spawnBroker([
        "run",
        "-A",
        MOD,
        ...ANY_LOCAL_PORT,
        "--stun-url",
        `stun:127.0.0.1:${coturn.port}`,
        "--turn-url",
        turnUrl,
        "--turn-secret-file",
        secretFile,
      ]);
      const client = new TestClient(`ws://127.0.0.1:${broker.port}/signal`);
      const joined = await client.join("turn-room");
      assert.deepEqual(joined.iceServers[0], {
        urls: `stun:127.0.0.1:${coturn.port}`,
      });
      const { username, credential } = turnEntry(joined);
      assert.match(username, new RegExp(`^\\d+:${joined.peerId}$`));
      // The default lifetime: an hour from now.
      const left = Number(username.split(":")[0]) - Date.now() / 1000;
      assert.ok(left > 3590 && left <= 3601, `${left}`);
      const run = await allocate(
        "127.0.0.1",
        coturn.port,
        username,
        credential,
      );
      assert.ok(run.ok, run.output);
      assert.match(run.output, /Total lost packets 0 /);
      // A wrong password is refused: the check above is not vacuous.
      const wrong = await allocate(
        "127.0.0.1",
        coturn.port,
        username,
        credential.replace(/^./, (c) => c === "A" ? "B" : "A"),
      );
      assert.equal(wrong.ok, false, wrong.output);
      // So is a username with another peer id under the same credential.
      const stolen = await allocate(
        "127.0.0.1",
        coturn.port,
        username.replace(/:.*/, ":someone-else"),
        credential,
      );
      assert.equal(stolen.ok, false, stolen.output);
      await client.close();
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
    assert.ok(
      !(await coturn.log()).includes(secret),
      "coturn logged the secret",
    );
  },
);

coturnTest(
  "coturn refuses a credential from joined once it expired, and accepts the fresh one of an ice frame",
  async () => {
    const secret = `secret-${crypto.randomUUID()}`;
    await using coturn = await loopbackCoturn(secret);
    await using t = await startServer({
      turn: {
        urls: [`turn:127.0.0.1:${coturn.port}`],
        secret,
        ttlSeconds: 2,
      },
    });
    const client = new TestClient(t.wsUrl);
    const { username, credential } = turnEntry(await client.join("expiry"));
    const expiry = Number(username.split(":")[0]) * 1000;
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, expiry - Date.now()) + 1_500)
    );
    const expired = await allocate(
      "127.0.0.1",
      coturn.port,
      username,
      credential,
    );
    assert.equal(expired.ok, false, expired.output);
    assert.match(await coturn.log(), new RegExp(`user <${username}>.*401`));
    // The ice frame gives fresh ones that work again.
    client.send({ type: "ice" });
    const frame = await client.next();
    assert.equal(frame.type, "ice");
    const fresh = turnEntry(frame);
    assert.notEqual(fresh.username, username);
    const again = await allocate(
      "127.0.0.1",
      coturn.port,
      fresh.username,
      fresh.credential,
    );
    assert.ok(again.ok, again.output);
    await client.close();
    assert.ok(
      !(await coturn.log()).includes(secret),
      "coturn logged the secret",
    );
  },
);

/** The coturn configuration of docs/operators/turn.md. */
async function documentedCoturnConfig(): Promise<string> {
  const [block] = await blocksRunBy(
    "docs/operators/turn.md",
    "ini",
    import.meta.url,
  );
  return block!.text;
}

coturnTest(
  "the documented coturn configuration takes the broker's credentials, serves turns:, and refuses to relay to loopback",
  async () => {
    const text = await documentedCoturnConfig();
    const secret = `secret-${crypto.randomUUID()}`;
    let tlsPort = 0;
    // The operator's file with this test's addresses, ports, secret and a
    // self-signed certificate; every other line as written.
    await using coturn = await startCoturn({
      secret,
      async config(port, dir) {
        tlsPort = await freePort({ udp: true });
        const made = await new Deno.Command("openssl", {
          args: [
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=turn.example.org",
            "-keyout",
            `${dir}/key.pem`,
            "-out",
            `${dir}/cert.pem`,
          ],
          stdin: "null",
          stdout: "null",
          stderr: "piped",
        }).output();
        assert.equal(made.code, 0, new TextDecoder().decode(made.stderr));
        const replaced = new Set<string>();
        const lines = text.split("\n").map((line) => {
          const key = /^([a-z-]+)=/.exec(line)?.[1] ?? "";
          const value: Record<string, string> = {
            "listening-ip": "127.0.0.1",
            "relay-ip": "127.0.0.1",
            "listening-port": String(port),
            "tls-listening-port": String(tlsPort),
            "cert": `${dir}/cert.pem`,
            "pkey": `${dir}/key.pem`,
            "static-auth-secret": secret,
          };
          if (key === "log-file") return "";
          if (!(key in value)) return line;
          replaced.add(key);
          return `${key}=${value[key]}`;
        });
        assert.equal(replaced.size, 7, [...replaced].join());
        return lines.join("\n");
      },
    });
    for (
      const key of [
        "use-auth-secret",
        "realm",
        "no-cli",
        "no-multicast-peers",
        "fingerprint",
        "user-quota",
        "total-quota",
        "max-bps",
      ]
    ) {
      assert.match(text, new RegExp(`^${key}\\b`, "m"), key);
    }
    assert.ok(
      !/^allow-loopback-peers/m.test(text),
      "allow-loopback-peers in the docs",
    );
    await using t = await startServer({
      turn: {
        urls: [
          `turn:127.0.0.1:${coturn.port}`,
          `turns:127.0.0.1:${tlsPort}?transport=tcp`,
        ],
        secret,
      },
    });
    const client = new TestClient(t.wsUrl);
    const { username, credential } = turnEntry(await client.join("readme"));
    await client.close();
    // The credentials are taken; relaying to 127.0.0.1 (the relay's own
    // host, in denied-peer-ip) is not, while the test configuration, with
    // allow-loopback-peers, relays there (the tests above). -c: no RTCP pair.
    const run = await allocate(
      "127.0.0.1",
      coturn.port,
      username,
      credential,
      ["-c"],
    );
    const log = await coturn.log();
    assert.equal(run.ok, false, run.output);
    assert.match(run.output, /403 \(Forbidden IP\)/, `${run.output}\n${log}`);
    assert.match(
      log,
      new RegExp(
        `user <${username}>: incoming packet ALLOCATE processed, success`,
      ),
    );
    // turns: is served: a TLS handshake with the certificate of `cert`.
    // (openssl, not turnutils_uclient -S: its TLS client often hangs.)
    let handshake = "";
    for (let attempt = 0; attempt < 50; attempt++) {
      const { stdout, stderr } = await new Deno.Command("openssl", {
        args: ["s_client", "-connect", `127.0.0.1:${tlsPort}`, "-brief"],
        stdin: "null",
        signal: AbortSignal.timeout(5_000),
      }).output();
      handshake = new TextDecoder().decode(stdout) +
        new TextDecoder().decode(stderr);
      if (/Protocol version: TLSv1\.[23]/.test(handshake)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.match(handshake, /Protocol version: TLSv1\.[23]/);
    assert.match(handshake, /CN ?= ?turn\.example\.org/);
    assert.ok(!log.includes(secret), "coturn logged the secret");
  },
);
