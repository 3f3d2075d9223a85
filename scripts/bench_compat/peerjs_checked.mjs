// Signaling benchmark adapter (for ../shared/bench/signaling/bench.mjs):
// the PeerJS server protocol with payloads of exactly PeerJS's keys, so that
// the broker's /peerjs (which refuses any other key) and peerjs-server are
// measured with the same client and the same bytes. The benchmark's
// sequence number and send time ride in `connectionId`
// (`<conn>_<seq>_<microseconds>`), a string PeerJS's client only compares.
export default {
  name: "peerjs-checked",
  defaults: { port: 9000, path: "/", key: "peerjs" },
  heartbeat: { intervalMs: 5000, frame: '{"type":"HEARTBEAT"}' },
  readyOnOpen: false,

  url(opts, peer) {
    const path = opts.path.endsWith("/") ? opts.path : opts.path + "/";
    const q = new URLSearchParams({
      key: opts.key,
      id: peer.id,
      token: peer.token,
    });
    return `ws://${opts.hostForUrl}:${opts.port}${path}peerjs?${q}`;
  },

  openFrames() {
    return [];
  },

  encode(_from, to, msg) {
    const { seq, t0, connectionId, sdp, candidate } = msg.payload;
    const id = `${connectionId}_${seq}_${Math.round(t0 * 1000)}`;
    const type = msg.type.toUpperCase();
    const payload = msg.type === "candidate"
      ? { candidate, type: "data", connectionId: id }
      : msg.type === "offer"
      ? {
        sdp,
        type: "data",
        connectionId: id,
        label: connectionId,
        reliable: true,
        serialization: "binary",
      }
      : { sdp, type: "data", connectionId: id };
    return JSON.stringify({ type, dst: to.id, payload });
  },

  decode(text) {
    let m;
    try {
      m = JSON.parse(text);
    } catch {
      return { kind: "ignore" };
    }
    const t = m && m.type;
    if (t === "OPEN") return { kind: "ready" };
    if (t === "OFFER" || t === "ANSWER" || t === "CANDIDATE") {
      const parts = String(m.payload.connectionId).split("_");
      const micros = Number(parts.pop());
      const seq = Number(parts.pop());
      return {
        kind: "relay",
        from: m.src,
        msg: { type: t.toLowerCase(), payload: { seq, t0: micros / 1000 } },
      };
    }
    if (t === "ERROR") {
      return { kind: "error", reason: (m.payload && m.payload.msg) || "ERROR" };
    }
    if (t === "ID-TAKEN") return { kind: "error", reason: "ID-TAKEN" };
    return { kind: "ignore", type: t };
  },
};
