#!/usr/bin/env bash
# The y-webrtc and PeerJS dialects side by side with their reference servers,
# in one run on one machine, with the shared signaling benchmark
# (../shared/bench/signaling, beside the project) and the adapters here,
# which send frames a checking server accepts:
#   /y-webrtc  vs y-webrtc 10.3.0's bin/server.js
#   /peerjs    vs peerjs-server (npm `peer`) 1.0.2
# Each: `conns` (sockets held, KB each) and `throughput` (server CPU per
# relayed message). The broker runs with its per-socket limits lifted
# (launch_podbroker.ts), as the shared suite does.
#   usage: scripts/bench_compat/run.sh [RESULTS_DIR]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_BENCH:-$(cd "$ROOT/../shared/bench/signaling" && pwd)}"
export RESULTS="${1:-$(mktemp -d -t compat-bench.XXXXXX)}"
export BENCH_DEPS="${BENCH_DEPS:-$(WITH_YWEBRTC=1 "$SHARED/install-deps.sh" | tail -1)}"
DENO="${DENO:-$(readlink -f "$(command -v deno)")}"
BROKER="'$DENO' run -A --config '$ROOT/deno.json' '$SHARED/launch_podbroker.ts' '$ROOT'"
# The same broker on its node:http adapter (src/mod_node.ts, the container's).
NODE_ADAPTER="'$DENO' run -A --config '$ROOT/deno.json' '$HERE/launch_node_adapter.ts'"

run() { # LABEL ADAPTER PORT SERVER_CMD [bench args...]
  local label="$1" adapter="$2" port="$3" cmd="$4"
  shift 4
  LABEL="$label" ADAPTER="$HERE/$adapter" PORT="$port" SERVER_CMD="$cmd" \
    START_TIMEOUT_S=60 "$SHARED/run.sh" "$@"
}

CONNS=(conns --n "${CONNS_N:-2000}" --hold 10)
THROUGHPUT=(throughput --pairs 50 --duration 10 --window 8 --mix signaling)
YREF="env PORT=4444 node --require '$SHARED/loopback-only.cjs' '$BENCH_DEPS/node_modules/y-webrtc/bin/server.js'"
PJREF="node '$BENCH_DEPS/node_modules/peer/dist/bin/peerjs.js' --host 127.0.0.1 --port 9000 --concurrent_limit 20000"

run ywebrtc-ref-conns ywebrtc_checked.mjs 4444 "$YREF" "${CONNS[@]}"
run ywebrtc-broker-conns ywebrtc_checked.mjs 8787 "$BROKER 8787" "${CONNS[@]}" --path /y-webrtc
run ywebrtc-ref-throughput ywebrtc_checked.mjs 4444 "$YREF" "${THROUGHPUT[@]}"
run ywebrtc-broker-throughput ywebrtc_checked.mjs 8787 "$BROKER 8787" "${THROUGHPUT[@]}" --path /y-webrtc
run peerjs-ref-conns peerjs_checked.mjs 9000 "$PJREF" "${CONNS[@]}"
run peerjs-broker-conns peerjs_checked.mjs 8787 "$BROKER 8787" "${CONNS[@]}"
run peerjs-ref-throughput peerjs_checked.mjs 9000 "$PJREF" "${THROUGHPUT[@]}"
run peerjs-broker-throughput peerjs_checked.mjs 8787 "$BROKER 8787" "${THROUGHPUT[@]}"
if [ "${WITH_NODE_ADAPTER:-1}" = "1" ]; then
  run ywebrtc-node-adapter-conns ywebrtc_checked.mjs 8787 "$NODE_ADAPTER 8787" "${CONNS[@]}" --path /y-webrtc
  run ywebrtc-node-adapter-throughput ywebrtc_checked.mjs 8787 "$NODE_ADAPTER 8787" "${THROUGHPUT[@]}" --path /y-webrtc
  run peerjs-node-adapter-conns peerjs_checked.mjs 8787 "$NODE_ADAPTER 8787" "${CONNS[@]}"
  run peerjs-node-adapter-throughput peerjs_checked.mjs 8787 "$NODE_ADAPTER 8787" "${THROUGHPUT[@]}"
fi
echo "results: $RESULTS/results.jsonl" >&2
