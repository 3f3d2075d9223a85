// A broker in its own process for the bus tests' kill -9 case: a Deno
// createSignalServer on 127.0.0.1 port 0 with a RedisBus. The Redis URL
// comes from the environment (REDIS_URL, never argv: it holds a password),
// the heartbeat from argv[0]. Prints {"port":N} on one line once it listens,
// then runs until it is killed.
import { startServer } from "./helpers.ts";
import { MemoryRegistry } from "../../src/registries/memory.ts";
import { createRedisBus } from "../../src/signaling/bus/redis.ts";

const bus = await createRedisBus({
  url: Deno.env.get("REDIS_URL")!,
  heartbeatMs: Number(Deno.args[0] ?? 5_000),
});
const server = (await startServer({
  registry: new MemoryRegistry(),
  bus,
})).server;
console.log(JSON.stringify({ port: server.port }));
