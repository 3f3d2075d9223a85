// A real coturn accepts the TURN credentials the broker hands out in
// `joined`, and refuses them once they expire (issue 9).
import assert from "node:assert/strict";
import { allocate, haveCoturn, startCoturn } from "./_coturn.ts";
import { startServer } from "./_helpers.ts";
import { type Frame, TestClient } from "./_ws.ts";

const inCi = Boolean(Deno.env.get("CI"));
const have = haveCoturn();

/** The TURN entry of a `joined` or `ice` frame. */
function turnEntry(frame: Frame): { username: string; credential: string } {
  const entry = frame.iceServers.find((server: Frame) =>
    [server.urls].flat().some((url: string) => url.startsWith("turn:"))
  );
  assert.ok(entry, JSON.stringify(frame));
  return entry;
}

Deno.test({
  name:
    "coturn allocates with the credentials from a real joined frame, and refuses them once expired",
  ignore: !have && !inCi,
  async fn() {
    assert.ok(have, "coturn is missing: apt-get install -y coturn");
    const secret = `secret-${crypto.randomUUID()}`;
    await using coturn = await startCoturn({
      secret,
      allowLoopbackPeers: true,
    });
    const turnUrl = `turn:127.0.0.1:${coturn.port}`;

    // A credential valid for an hour works.
    {
      await using t = await startServer({
        turn: { urls: [turnUrl], secret, ttlSeconds: 3600 },
      });
      const client = new TestClient(t.wsUrl);
      const joined = await client.join("turn-room");
      const { username, credential } = turnEntry(joined);
      assert.match(username, new RegExp(`^\\d+:${joined.peerId}$`));
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
      await client.close();
    }

    // A two-second credential is refused once its time has passed.
    {
      await using t = await startServer({
        turn: { urls: [turnUrl], secret, ttlSeconds: 2 },
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
      assert.match(
        await coturn.log(),
        new RegExp(`user <${username}>.*401`),
      );
      // The ice frame gives fresh ones that work again.
      client.send({ type: "ice" });
      const fresh = turnEntry(await client.next());
      const again = await allocate(
        "127.0.0.1",
        coturn.port,
        fresh.username,
        fresh.credential,
      );
      assert.ok(again.ok, again.output);
      await client.close();
    }
    assert.ok(
      !(await coturn.log()).includes(secret),
      "coturn logged the secret",
    );
  },
});
