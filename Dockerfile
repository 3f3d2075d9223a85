# pod-broker on Deno: SQLite registry on the /data volume, port 8080.
# It runs the node:http adapter (src/mod_node.ts, on Deno's node:http and
# `ws`): a WebSocket frame over --max-frame-bytes is refused from its header,
# and a request head has a time limit. src/mod.ts (Deno.serve) has neither.
#   docker build -t pod-broker .
#   docker run -p 8080:8080 -v pod-data:/data pod-broker
FROM denoland/deno:2.9.6

WORKDIR /app
RUN mkdir -p /data && chown deno:deno /data
USER deno

# Dependencies are fetched at build time only; the container runs offline
# (--cached-only) from the image's DENO_DIR.
COPY --chown=deno:deno deno.json deno.lock ./
COPY --chown=deno:deno src/ src/
RUN deno install --frozen --entrypoint src/mod_node.ts

EXPOSE 8080
VOLUME /data

HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["deno", "eval", "const r = await fetch('http://127.0.0.1:8080/health'); Deno.exit(r.ok ? 0 : 1);"]

# The narrowest permissions that work: the network, /data for the SQLite
# file and the blobs, /run/secrets to read a TURN secret file (Docker and
# Kubernetes secrets), and the environment (secrets may come from
# POD_BROKER_TURN_SECRET, REDIS_URL, DATABASE_URL; and the Redis client's
# `debug` dependency lists every variable, so a list of names is not enough).
# Flags given to `docker run` replace CMD.
ENTRYPOINT ["deno", "run", "--cached-only", "--allow-net", "--allow-read=/data,/run/secrets", "--allow-write=/data", "--allow-env", "src/mod_node.ts"]
CMD ["--registry", "sqlite", "--data-dir", "/data", "--port", "8080"]
