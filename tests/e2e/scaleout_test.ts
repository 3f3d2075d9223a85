// Past one machine (issue 14): two CLI brokers sharing one PostgreSQL and
// one Redis, started the way docs/operators/scale-out.md says (secrets from
// the environment): a pod uploaded through A is served by B with its hits
// counted once for both, peers on A and B share a session and signal each
// other, and a takedown on the shared database is seen by both.
import assert from "node:assert/strict";
import { supportFile } from "../support/paths.ts";
import { gatedTest } from "../support/gated.ts";
import {
  CHROMIUM,
  chromiumNotice,
  hasChromium,
  runJourneyOk,
} from "../support/browser.ts";
import {
  ANY_LOCAL_PORT,
  cli,
  MOD,
  signedPod,
  spawnBroker,
  upload,
} from "../support/helpers.ts";
import { havePostgres, startPostgres } from "../support/postgres.ts";
import { haveRedis, startRedis } from "../support/redis.ts";
import { assertSessionAcross } from "../contract/_wire.ts";

const have = havePostgres() && haveRedis();

gatedTest(
  "scale-out: two brokers on one PostgreSQL and one Redis share pods, hits, sessions and takedowns",
  have,
  "PostgreSQL and Redis are needed",
  async () => {
    await using pg = await startPostgres();
    await using redis = await startRedis();
    const env = {
      DATABASE_URL: pg.url(await pg.createDatabase()),
      REDIS_URL: redis.url,
    };
    const args = [
      "run",
      "-A",
      MOD,
      "--registry",
      "postgres",
      "--bus",
      "redis",
      ...ANY_LOCAL_PORT,
    ];
    await using a = await spawnBroker(args, undefined, env);
    await using b = await spawnBroker(args, undefined, env);
    const urlA = `http://127.0.0.1:${a.port}`;
    const urlB = `http://127.0.0.1:${b.port}`;

    // A pod uploaded through A is served by B, byte for byte.
    const pod = await signedPod();
    const created = await upload(urlA, pod);
    assert.equal(created.status, 201);
    const { id } = await created.json();
    for (const url of [urlB, urlA, urlB]) {
      const got = await fetch(`${url}/${id}`);
      assert.equal(got.status, 200);
      assert.deepEqual(new Uint8Array(await got.arrayBuffer()), pod);
    }
    let hits = 0;
    for (let i = 0; i < 50 && hits !== 3; i++) {
      hits = (await (await fetch(`${urlA}/${id}/meta`)).json()).hits;
      if (hits !== 3) await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(hits, 3, "hits through A and B counted in one place");

    // Peers on A and B share a session; a signal crosses to its addressee.
    await assertSessionAcross(
      `ws://127.0.0.1:${a.port}/signal`,
      `ws://127.0.0.1:${b.port}/signal`,
      "scale",
    );

    // A takedown on the shared database: 410 on both, within a second.
    const deleted = await cli([
      "delete",
      id,
      "--registry",
      "postgres",
      "--database-url",
      env.DATABASE_URL,
    ]);
    assert.equal(deleted.code, 0, deleted.stderr);
    for (const url of [urlA, urlB]) {
      const gone = await fetch(`${url}/${id}`);
      assert.equal(gone.status, 410);
      await gone.body?.cancel();
    }
    assert.equal(await a.stop(), 0);
    assert.equal(await b.stop(), 0);
  },
);

chromiumNotice("the scale-out browser test");

gatedTest(
  "scale-out: a pod opened through broker A chats with one opened through broker B",
  have && hasChromium,
  have
    ? `${CHROMIUM} is missing: apt-get install -y chromium`
    : "PostgreSQL and Redis are needed",
  async () => {
    await runJourneyOk(
      supportFile("scaleout_journey.ts"),
    );
  },
);
