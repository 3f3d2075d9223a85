// Signaling benchmark adapter (for ../shared/bench/signaling/bench.mjs):
// the y-webrtc protocol with frames a checking server accepts, so that the
// broker's /y-webrtc and y-webrtc's reference server (bin/server.js) are
// measured with the same client and the same bytes. A message is a
// y-webrtc `signal` publish with a simple-peer signal (an offer or answer
// SDP, or a candidate); the benchmark's sequence number and send time ride
// in `token` (seq * 1e9 + microseconds), which y-webrtc's own client uses
// for glare and the broker passes as any number.
const EPOCH = 1e9;

export default {
  name: "ywebrtc-checked",
  defaults: { port: 4444, path: "/", key: "" },
  heartbeat: { intervalMs: 15000, frame: '{"type":"ping"}' },
  readyOnOpen: false,

  url(opts, _peer) {
    return `ws://${opts.hostForUrl}:${opts.port}${opts.path}`;
  },

  openFrames(_opts, peer) {
    return [
      JSON.stringify({ type: "subscribe", topics: [peer.session] }),
      JSON.stringify({
        type: "publish",
        topic: peer.session,
        data: { type: "announce", from: peer.id },
      }),
      '{"type":"ping"}',
    ];
  },

  encode(from, to, msg) {
    const { seq, t0 } = msg.payload;
    const signal = msg.type === "candidate"
      ? { type: "candidate", candidate: msg.payload.candidate }
      : { type: msg.type, sdp: msg.payload.sdp.sdp };
    return JSON.stringify({
      type: "publish",
      topic: from.session,
      data: {
        type: "signal",
        from: from.id,
        to: to.id,
        token: seq * EPOCH + Math.round(t0 * 1000),
        signal,
      },
    });
  },

  decode(text, peer) {
    let m;
    try {
      m = JSON.parse(text);
    } catch {
      return { kind: "ignore" };
    }
    if (!m) return { kind: "ignore" };
    if (m.type === "pong") {
      return peer.ready ? { kind: "ignore", type: "pong" } : { kind: "ready" };
    }
    if (m.type === "publish" && m.data && m.data.type === "signal") {
      if (m.data.to !== peer.id) return { kind: "ignore", type: "not-for-me" };
      const token = m.data.token;
      const signal = m.data.signal;
      const type = signal.type === "candidate" ? "candidate" : signal.type;
      return {
        kind: "relay",
        from: m.data.from,
        msg: {
          type,
          payload: {
            seq: Math.floor(token / EPOCH),
            t0: (token % EPOCH) / 1000,
          },
        },
      };
    }
    if (m.type === "error") return { kind: "error", reason: m.code };
    return { kind: "ignore", type: m.type };
  },
};
