// One bare Deno.serve answering every request with the same pod and a fixed
// set of headers, for `scripts/bench_ceiling.ts`: with `new`, a new
// `Response` for each request, as the HTTP bench's floor does; with `clone`,
// a clone of one made at start, as the broker answers a small pod (the
// cheapest way Deno.serve has to send many headers).
//
//   deno run --allow-net=127.0.0.1 --allow-read serve_deno.ts PORT POD HEADERS_JSON new|clone

const [port, pod, headersFile, mode] = Deno.args;
if (
  !/^\d+$/.test(port ?? "") || !pod || !headersFile ||
  (mode !== "new" && mode !== "clone")
) {
  console.error("usage: serve_deno.ts PORT POD HEADERS_JSON new|clone");
  Deno.exit(2);
}
const body = await Deno.readFile(pod);
const headers: Record<string, string> = JSON.parse(
  await Deno.readTextFile(headersFile),
);
const ready = new Response(body, { headers });
Deno.serve(
  { port: Number(port), hostname: "127.0.0.1", onListen: () => {} },
  mode === "new" ? () => new Response(body, { headers }) : () => ready.clone(),
);
