// A broker configured from its environment, as the docs recommend for
// secrets: a private PostgreSQL (DATABASE_URL), a private Redis (REDIS_URL)
// and a TURN secret (POD_BROKER_TURN_SECRET), none of them on the command
// line. Each documented way to start the broker (deno task start, the
// systemd unit, the container) is run with these and checked the same way.
import assert from "node:assert/strict";
import { startPostgres, type TestPostgres } from "./postgres.ts";
import { startRedis, type TestRedis } from "./redis.ts";
import { signedPod } from "./helpers.ts";
import {
  expectedTurnCredential,
  type Frame,
  TestClient,
} from "../contract/_wire.ts";

/** The TURN URL every run names (no TURN server needed: only minting). */
export const TURN_URL = "turn:127.0.0.1:3478";

/** PostgreSQL, Redis and a TURN secret for one broker. */
export interface EnvServices extends AsyncDisposable {
  /** The variables to start the broker with. */
  env: {
    POD_BROKER_TURN_SECRET: string;
    DATABASE_URL: string;
    REDIS_URL: string;
  };
  /** Serve flags that make the broker read each of them. */
  flags: string[];
  /** The PostgreSQL server. */
  postgres: TestPostgres;
  /** The Redis server. */
  redis: TestRedis;
}

/** Starts PostgreSQL and Redis and makes a TURN secret. */
export async function startEnvServices(): Promise<EnvServices> {
  const postgres = await startPostgres();
  let redis: TestRedis;
  try {
    redis = await startRedis();
  } catch (error) {
    await postgres.stop();
    throw error;
  }
  const database = await postgres.createDatabase();
  const stop = async () => {
    await redis.stop();
    await postgres.stop();
  };
  return {
    env: {
      POD_BROKER_TURN_SECRET: `turn-${crypto.randomUUID()}`,
      DATABASE_URL: postgres.url(database),
      REDIS_URL: redis.url,
    },
    flags: [
      "--registry",
      "postgres",
      "--bus",
      "redis",
      "--turn-url",
      TURN_URL,
    ],
    postgres,
    redis,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * Checks that the broker at `base` took each variable: `joined` carries TURN
 * credentials minted with the secret, an upload is stored in PostgreSQL (read back
 * through the registry's own table), and `/health` answers (the Redis bus
 * was up before it listened).
 */
export async function assertEnvBroker(
  base: string,
  services: EnvServices,
): Promise<void> {
  const health = await fetch(`${base}/health`);
  assert.equal((await health.json()).status, "ok");
  const client = new TestClient(`${base.replace(/^http/, "ws")}/signal`);
  let joined: Frame;
  try {
    joined = await client.join("env-start");
  } finally {
    await client.close();
  }
  const turn = (joined.iceServers as Frame[]).find((server) =>
    [server.urls].flat().includes(TURN_URL)
  );
  assert.ok(turn?.username && turn.credential, JSON.stringify(joined));
  assert.equal(
    turn.credential,
    await expectedTurnCredential(
      services.env.POD_BROKER_TURN_SECRET,
      turn.username,
    ),
    "minted with the environment's secret",
  );

  const uploaded = await fetch(`${base}/pods`, {
    method: "POST",
    headers: { "Content-Type": "text/html" },
    body: await signedPod(),
  });
  assert.equal(uploaded.status, 201);
  const { id } = await uploaded.json();
  const { default: postgres } = await import("postgres");
  const sql = postgres(services.env.DATABASE_URL, { onnotice: () => {} });
  try {
    const rows = await sql`select id from pod_broker_pods where id = ${id}`;
    assert.equal(rows.length, 1, "the pod is in DATABASE_URL's database");
  } finally {
    await sql.end();
  }
}
