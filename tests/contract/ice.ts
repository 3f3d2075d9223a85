// ICE servers in the signaling protocol (DESIGN section 7): `joined` carries
// them, an `ice` frame refreshes them, the TURN secret never shows. Runs on
// Deno and on the npm package under Node 22 (see _suite.ts).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import {
  freePort,
  runCommand,
  startServer,
  tempDir,
  waitForPort,
  waitForStun,
} from "./_servers.ts";
import { test } from "./_suite.ts";
import { expectedTurnCredential, TestClient } from "./_wire.ts";

test("signaling: joined carries iceServers, ice returns fresh ones, the secret never shows", async (api) => {
  const secret = "turn-secret-" + crypto.randomUUID();
  const logged: string[] = [];
  await using t = await startServer(api, {
    iceServers: [{ urls: "stun:stun.example:3478" }],
    turn: { urls: ["turn:127.0.0.1:3478"], secret, ttlSeconds: 120 },
    logger: (...args) => logged.push(JSON.stringify(args)),
  });
  const a = new TestClient(t.wsUrl);
  const before = Math.floor(Date.now() / 1000);
  const joined = await a.join("ice-room");
  const after = Math.floor(Date.now() / 1000);
  assert.equal(joined.iceServers.length, 2);
  assert.deepEqual(joined.iceServers[0], { urls: "stun:stun.example:3478" });
  const turn = joined.iceServers[1];
  assert.deepEqual(turn.urls, ["turn:127.0.0.1:3478"]);
  const [expiry, peerId] = turn.username.split(":");
  assert.equal(peerId, joined.peerId);
  assert.ok(Number(expiry) >= before + 120 && Number(expiry) <= after + 120);
  assert.equal(
    turn.credential,
    await expectedTurnCredential(secret, turn.username),
  );

  await new Promise((resolve) => setTimeout(resolve, 1_100));
  a.send({ type: "ice" });
  const fresh = await a.next();
  assert.equal(fresh.type, "ice");
  const again = fresh.iceServers[1];
  assert.ok(Number(again.username.split(":")[0]) > Number(expiry));
  assert.equal(
    again.credential,
    await expectedTurnCredential(secret, again.username),
  );

  const b = new TestClient(t.wsUrl);
  await b.opened();
  b.send({ type: "ice" });
  assert.equal((await b.next()).code, "not_joined");
  b.send({ type: "ice", extra: true });
  assert.equal((await b.next()).code, "bad_message");

  const health = await (await fetch(`${t.url}/health`)).text();
  for (const text of [health, ...logged]) {
    assert.ok(!text.includes(secret), "the secret leaked");
  }
  a.ws.close();
  b.ws.close();
  await Promise.all([a.closed, b.closed]);
});

test("signaling: joined carries an empty iceServers list when none is configured", async (api) => {
  await using t = await startServer(api);
  const a = new TestClient(t.wsUrl);
  assert.deepEqual((await a.join("plain")).iceServers, []);
  a.ws.close();
  await a.closed;
});

const TURNSERVER = "/usr/bin/turnserver";
const UCLIENT = "/usr/bin/turnutils_uclient";

test("turn: a real coturn allocates with the credentials of a joined frame, and refuses a tampered one", async (api) => {
  if (!existsSync(TURNSERVER) || !existsSync(UCLIENT)) {
    if (process.env.CI) throw new Error(`${TURNSERVER} is missing`);
    console.error(`\n!!! ${TURNSERVER} is missing: this case is SKIPPED\n`);
    return;
  }
  const secret = `secret-${crypto.randomUUID()}`;
  await using dir = await tempDir("pod-broker-coturn-");
  const port = await freePort({ udp: true });
  // The secret goes in a 0600 file, never on a command line.
  await writeFile(
    join(dir.path, "turnserver.conf"),
    [
      "listening-ip=127.0.0.1",
      `listening-port=${port}`,
      "relay-ip=127.0.0.1",
      "min-port=45000",
      "max-port=47999",
      "use-auth-secret",
      `static-auth-secret=${secret}`,
      "realm=pod-broker.test",
      "allow-loopback-peers",
      "no-cli",
      "no-tls",
      "no-dtls",
      "fingerprint",
      `log-file=${join(dir.path, "turn.log")}`,
      `pidfile=${join(dir.path, "turn.pid")}`,
      `userdb=${join(dir.path, "turndb")}`,
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
  const coturn = spawn(TURNSERVER, ["-c", join(dir.path, "turnserver.conf")], {
    stdio: "ignore",
  });
  const exited = new Promise((resolve) => coturn.once("exit", resolve));
  try {
    await waitForPort(port, "coturn");
    await waitForStun(port, "coturn");
    await using t = await startServer(api, {
      turn: { urls: [`turn:127.0.0.1:${port}`], secret, ttlSeconds: 600 },
    });
    const client = new TestClient(t.wsUrl);
    const joined = await client.join("coturn");
    const turn = joined.iceServers.find((s: { urls: string[] }) =>
      s.urls.some((url) => url.startsWith("turn:"))
    );
    const allocate = (password: string) =>
      runCommand(UCLIENT, [
        "-u",
        turn.username,
        "-w",
        password,
        "-p",
        String(port),
        "-n",
        "2",
        "-m",
        "1",
        "-y",
        "127.0.0.1",
      ]);
    const ok = await allocate(turn.credential);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    const tampered = await allocate(
      turn.credential.replace(/^./, (c: string) => c === "A" ? "B" : "A"),
    );
    assert.notEqual(tampered.code, 0, "a tampered credential was accepted");
    client.ws.close();
    await client.closed;
  } finally {
    coturn.kill("SIGKILL");
    await exited;
  }
});
