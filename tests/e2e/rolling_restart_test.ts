// A rolling restart nobody notices (DESIGN section 10.4): three brokers (the
// node:http entry, as the container runs it) on one Redis, 16 raw clients in
// 4 rooms sending numbered signals to each other, and the brokers restarted
// one at a time while the traffic runs. Each broker exits 0 within its drain
// window, having closed its sockets spread over at least half of it; every
// drained client resumes on another broker with its peer id, nobody sees it
// leave or join, and every numbered signal arrives exactly once, in order; a
// newcomer joins any room within 2 s at any moment.
import assert from "node:assert/strict";
import process from "node:process";
import { type BrokerProcess, spawnBroker } from "../support/broker_process.ts";
import { freePort, sleep, until } from "../support/ports.ts";
import { haveRedis, startRedis } from "../support/redis.ts";
import { within } from "../support/wait.ts";
import { TestClient } from "../contract/_wire.ts";

const WINDOW_S = 4;
const ROOMS = 4;
const PER_ROOM = 4;
/** Between two signals from one client to one other member. */
const SEND_EVERY_MS = 200;
/** A drained client comes back within this (the browser client: 2 s). */
const BACK_WITHIN_MS = 1_000;
const ENTRY = new URL("../../src/mod_node.ts", import.meta.url).pathname;

/** The brokers, by port; `draining` is the one being restarted. */
interface Cluster {
  ports: number[];
  draining: number | null;
}

/** A port of a broker that takes new sockets, picked at random. */
function anyLive(cluster: Cluster): number {
  const live = cluster.ports.filter((port) => port !== cluster.draining);
  return live[Math.floor(Math.random() * live.length)]!;
}

/**
 * A raw signaling client that resumes with its token after a drain, on
 * whichever broker the "load balancer" (`anyLive`) gives it.
 */
class Peer {
  id = "";
  token: string | undefined;
  ws: WebSocket | undefined;
  joined = false;
  told = false;
  /** Ids it had before each resume, and after. */
  resumes: [string, string][] = [];
  /** 1012 closes: when, and on which broker. */
  drained: { at: number; port: number }[] = [];
  /** peer-joined and peer-left frames, with the peer they name. */
  membership: string[] = [];
  /** Numbers received, by sender. */
  got = new Map<string, number[]>();
  /** The next number to send, by addressee. */
  next = new Map<string, number>();
  errors: string[] = [];
  #stopped = false;
  #retry: ReturnType<typeof setTimeout> | undefined;

  constructor(readonly room: string, readonly cluster: Cluster) {}

  connect(port: number): void {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/signal`);
    this.ws = ws;
    this.told = false;
    ws.onopen = () =>
      ws.send(JSON.stringify({
        type: "join",
        session: this.room,
        resume: this.token,
      }));
    ws.onmessage = (event) => this.#frame(JSON.parse(event.data));
    ws.onclose = (event) => {
      this.joined = false;
      if (this.#stopped) return;
      if (event.code === 1012) this.drained.push({ at: Date.now(), port });
      const delay = event.code === 1012 ? Math.random() * BACK_WITHIN_MS : 200;
      this.#retry = setTimeout(
        () => this.connect(anyLive(this.cluster)),
        delay,
      );
    };
  }

  /** Sends the next numbered signal to each of `others`. */
  tick(others: string[]): void {
    if (!this.joined || this.told) return;
    if (this.ws?.readyState !== WebSocket.OPEN) return;
    for (const to of others) {
      const n = this.next.get(to) ?? 0;
      this.next.set(to, n + 1);
      this.ws!.send(JSON.stringify({
        type: "signal",
        to,
        data: { candidate: { candidate: `n ${n}` } },
      }));
    }
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#retry);
    this.ws?.close();
  }

  /** Whether its socket is closed (or it has none). */
  get closed(): boolean {
    return (this.ws?.readyState ?? WebSocket.CLOSED) === WebSocket.CLOSED;
  }

  #frame(frame: Record<string, unknown>): void {
    switch (frame.type) {
      case "joined": {
        const id = frame.peerId as string;
        if (this.id !== "") this.resumes.push([this.id, id]);
        this.id = id;
        this.token = frame.resume as string;
        this.joined = true;
        break;
      }
      case "reconnect":
        this.told = true;
        break;
      case "peer-joined":
      case "peer-left":
        this.membership.push(`${frame.type} ${frame.peerId}`);
        break;
      case "signal": {
        const data = frame.data as { candidate: { candidate: string } };
        const n = Number(data.candidate.candidate.slice(2));
        const from = frame.from as string;
        this.got.set(from, [...this.got.get(from) ?? [], n]);
        break;
      }
      default:
        this.errors.push(JSON.stringify(frame));
    }
  }
}

function startBroker(port: number, redisUrl: string): Promise<BrokerProcess> {
  return spawnBroker(Deno.execPath(), [
    "run",
    "-A",
    ENTRY,
    "--registry",
    "memory",
    "--bus",
    "redis",
    "--drain-seconds",
    String(WINDOW_S),
    "--access-log",
    "off",
    "--port",
    String(port),
    "--hostname",
    "127.0.0.1",
  ], { env: { REDIS_URL: redisUrl } });
}

/**
 * A newcomer joins `room` within 2 s through the "load balancer", trying
 * another live broker when one refuses it (it began to drain meanwhile).
 */
async function newcomer(cluster: Cluster, room: string): Promise<number> {
  const started = performance.now();
  for (let attempt = 0; performance.now() - started < 2_000; attempt++) {
    const client = new TestClient(`ws://127.0.0.1:${anyLive(cluster)}/signal`);
    try {
      await client.opened();
      client.send({ type: "join", session: room });
      const joined = await client.next(2_000);
      if (joined.type === "joined") return performance.now() - started;
    } catch {
      // Refused: the next attempt goes to another broker.
    } finally {
      if (client.ws.readyState !== WebSocket.CONNECTING) await client.close();
    }
    await sleep(50);
  }
  return performance.now() - started;
}

/** Restarts the broker at `index`; returns how long its drain took. */
async function restart(
  cluster: Cluster,
  brokers: BrokerProcess[],
  index: number,
  redisUrl: string,
): Promise<number> {
  const port = cluster.ports[index]!;
  cluster.draining = port;
  const signalled = performance.now();
  process.kill(brokers[index]!.pid, "SIGTERM");
  // The signal takes a moment to arrive: then /health says draining.
  await until(async () => {
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    const { status } = await health.json();
    return health.status === 503 && status === "draining";
  }, `the broker on ${port} to say draining`);
  assert.equal(await brokers[index]!.exited(), 0);
  const took = performance.now() - signalled;
  brokers[index] = await startBroker(port, redisUrl);
  await until(async () => {
    const health = await (await fetch(`http://127.0.0.1:${port}/health`))
      .json();
    return health.status === "ok" && health.bus === "up";
  }, `the broker on ${port} to serve again`);
  cluster.draining = null;
  return took;
}

Deno.test({
  name:
    "a rolling restart of three brokers on one Redis: no client loses its id, its place or a signal",
  ignore: !haveRedis() && !Deno.env.get("CI"),
  async fn() {
    await using redis = await startRedis();
    const cluster: Cluster = {
      ports: [await freePort(), await freePort(), await freePort()],
      draining: null,
    };
    const brokers = await Promise.all(
      cluster.ports.map((port) => startBroker(port, redis.url)),
    );
    const peers: Peer[] = [];
    let traffic: ReturnType<typeof setInterval> | undefined;
    try {
      for (let i = 0; i < ROOMS * PER_ROOM; i++) {
        const peer = new Peer(`room-${i % ROOMS}`, cluster);
        peer.connect(cluster.ports[i % cluster.ports.length]!);
        peers.push(peer);
      }
      await until(() => peers.every((p) => p.joined), "every client to join");
      const ids = new Set(peers.map((p) => p.id));
      const roomOf = (peer: Peer) =>
        peers.filter((p) => p.room === peer.room && p !== peer).map((p) =>
          p.id
        );
      // From here on, no frame about any of them is expected.
      await sleep(500);
      for (const peer of peers) peer.membership.length = 0;
      traffic = setInterval(
        () => peers.forEach((p) => p.tick(roomOf(p))),
        SEND_EVERY_MS,
      );
      const joins: number[] = [];
      let restarting = true;
      const newcomers = (async () => {
        for (let i = 0; restarting; i++) {
          joins.push(await newcomer(cluster, `room-${i % ROOMS}`));
          await sleep(300);
        }
      })();
      // bounded: the loop ends with the restarts; within() below bounds it
      const took: number[] = [];
      // The most reconnects the survivors took in any one second.
      const peaks: number[] = [];
      const drainedBefore = (port: number) =>
        peers.flatMap((p) => p.drained).filter((d) => d.port === port);
      for (let index = 0; index < cluster.ports.length; index++) {
        const port = cluster.ports[index]!;
        const before = drainedBefore(port).length;
        took.push(await restart(cluster, brokers, index, redis.url));
        const closes = drainedBefore(port).slice(before).map((d) => d.at);
        peaks.push(
          Math.max(
            ...closes.map((t) =>
              closes.filter((u) => u >= t && u < t + 1000).length
            ),
          ),
        );
        assert.ok(closes.length >= 2, `${closes.length} sockets on ${port}`);
        const spread = Math.max(...closes) - Math.min(...closes);
        assert.ok(
          spread >= WINDOW_S * 1000 / 2,
          `${closes.length} closes on ${port} came within ${spread} ms`,
        );
      }
      restarting = false;
      await within(newcomers, "the last newcomer");
      clearInterval(traffic);
      traffic = undefined;
      await until(
        () => peers.every((p) => p.joined && !p.told),
        "every client to be back",
      );
      // What was sent arrives: the last signals need a moment.
      const complete = () =>
        peers.every((to) =>
          peers.every((from) =>
            (to.got.get(from.id)?.length ?? 0) === (from.next.get(to.id) ?? 0)
          )
        );
      await until(complete, "every numbered signal", 10_000).catch(() => {});
      for (const [i, broker] of took.entries()) {
        assert.ok(broker < WINDOW_S * 1000, `broker ${i} drained in ${broker}`);
      }
      for (const peer of peers) {
        assert.deepEqual(peer.errors, [], peer.id);
        for (const [before, after] of peer.resumes) {
          assert.equal(after, before, "a drained client keeps its id");
        }
        const seen = peer.membership.filter((m) => ids.has(m.split(" ")[1]!));
        assert.deepEqual(seen, [], `${peer.id} saw a member leave or join`);
        for (const from of peers) {
          if (from.room !== peer.room || from === peer) continue;
          const sent = from.next.get(peer.id) ?? 0;
          assert.deepEqual(
            peer.got.get(from.id) ?? [],
            Array.from({ length: sent }, (_, n) => n),
            `${from.id} -> ${peer.id}`,
          );
        }
      }
      assert.ok(peers.some((p) => p.resumes.length > 0), "someone resumed");
      assert.ok(
        joins.length > 0 && joins.every((ms) => ms <= 2_000),
        `${joins}`,
      );
      console.log(
        `rolling restart: drains took ${took.map(Math.round)} ms; ${
          peers.reduce((n, p) => n + p.resumes.length, 0)
        } resumes; ${joins.length} newcomers, slowest ${
          Math.round(Math.max(...joins))
        } ms; reconnects at the survivors, most in one second: ${peaks} (of ${
          peers.reduce((n, p) => n + p.drained.length, 0)
        } drained)`,
      );
    } finally {
      clearInterval(traffic);
      for (const peer of peers) peer.stop();
      await until(() => peers.every((p) => p.closed), "the clients to close")
        .catch(() => {});
      for (const broker of brokers) await broker.stop();
    }
  },
});
