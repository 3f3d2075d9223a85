# pod-broker on Deno: SQLite registry on the /data volume, port 8080.
# It runs the node:http adapter (src/mod_node.ts, on Deno's node:http and
# `ws`): a WebSocket frame over --max-frame-bytes is refused from its header,
# and a request head has a time limit. src/mod.ts (Deno.serve) has neither.
#   docker build -t pod-broker .
#   buildah bud --format docker -t pod-broker .   (OCI format drops HEALTHCHECK)
#   docker run -p 8080:8080 -v pod-data:/data pod-broker
# On SIGTERM (docker stop) the broker drains its WebSockets over
# --drain-seconds (30 by default) before it exits; docker and podman kill it
# after 10 s unless run with --stop-timeout 45 (an image cannot set this).
# The base is named in full, so that podman and buildah find it without a
# short-name alias; BASE_IMAGE picks another (a mirror, or a local stand-in
# built by scripts/base_image.sh).
ARG BASE_IMAGE=docker.io/denoland/deno:2.9.6
FROM ${BASE_IMAGE}

WORKDIR /app
RUN mkdir -p /data && chown deno:deno /data
USER deno

# Only what serving loads is fetched, at build time, from serve.lock (the
# packages of src/mod_node.ts and src/mod.ts, nothing the tests alone use);
# the container then runs offline (--cached-only) from the image's DENO_DIR.
# Behind a proxy with a CA of its own, pass it as a build secret (it is not
# kept in the image): --secret id=deno_cert,src=/path/to/ca.pem
COPY --chown=deno:deno deno.json serve.lock ./
COPY --chown=deno:deno src/ src/
RUN --mount=type=secret,id=deno_cert,mode=0444 \
  if [ -s /run/secrets/deno_cert ]; then export DENO_CERT=/run/secrets/deno_cert; fi; \
  deno install --frozen --lock=serve.lock --entrypoint src/mod_node.ts

EXPOSE 8080
VOLUME /data

HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["deno", "eval", "--no-config", "const r = await fetch('http://127.0.0.1:8080/health'); Deno.exit(r.ok ? 0 : 1);"]

# The narrowest permissions that work: the network, /app/src to read the
# broker's own modules (deno.json's lazy-dynamic-imports loads a dynamic
# import, such as the PostgreSQL registry or the Nostr signature check, when
# it first runs, and Deno reads it then), /data for the SQLite file and the
# blobs, /run/secrets to read a TURN secret file (Docker and Kubernetes
# secrets), and the environment (secrets may come from
# POD_BROKER_TURN_SECRET, REDIS_URL, DATABASE_URL; and the Redis client's
# `debug` dependency lists every variable, so a list of names is not enough).
# Flags given to `docker run` replace CMD.
ENTRYPOINT ["deno", "run", "--cached-only", "--frozen", "--lock=serve.lock", "--allow-net", "--allow-read=/app/src,/data,/run/secrets", "--allow-write=/data", "--allow-env", "src/mod_node.ts"]
CMD ["--registry", "sqlite", "--data-dir", "/data", "--port", "8080"]
