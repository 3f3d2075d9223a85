// One bare node:http server answering every request with the same pod and a
// fixed set of headers, for `scripts/bench_ceiling.ts` (on Node, and on Deno's
// node:http).
//
//   node serve_node.mjs PORT POD HEADERS_JSON

import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import process from "node:process";

const [port, pod, headersFile] = process.argv.slice(2);
if (!/^\d+$/.test(port ?? "") || !pod || !headersFile) {
  console.error("usage: serve_node.mjs PORT POD HEADERS_JSON");
  process.exit(2);
}
const body = readFileSync(pod);
const head = Object.entries(JSON.parse(readFileSync(headersFile, "utf8")))
  .flat();
head.push("content-length", String(body.length));
createServer((_, res) => {
  res.writeHead(200, head);
  res.end(body);
}).listen(Number(port), "127.0.0.1");
