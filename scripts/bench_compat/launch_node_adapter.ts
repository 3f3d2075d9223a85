// Starts the broker on its node:http adapter (src/mod_node.ts, what the
// container runs) for the signaling benchmark, with the per-socket limits
// lifted as ../shared/bench/signaling/launch_podbroker.ts lifts them.
//   deno run -A --config PROJECT/deno.json launch_node_adapter.ts PORT
import { createSignalServer, MemoryRegistry } from "../../src/mod_node.ts";

const port = Number(Deno.args[0]);
const server = await createSignalServer({
  registry: new MemoryRegistry(),
  port,
  hostname: "127.0.0.1",
  accessLog: "off",
  signaling: {
    maxPeersPerSession: 1_000_000,
    maxSockets: 1_000_000,
    rateLimitBurst: 1_000_000_000,
    rateLimitPerSecond: 1_000_000_000,
  },
});
console.log(`listening on 127.0.0.1:${server.port}`);
const stop = () => server.close().finally(() => Deno.exit(0));
Deno.addSignalListener("SIGTERM", stop);
Deno.addSignalListener("SIGINT", stop);
