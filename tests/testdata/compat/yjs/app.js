// A Yjs document shared with y-webrtc, signaling through the broker that
// serves the pod: the one line an app written for y-webrtc changes is
// `signaling`. The room and password come from the URL fragment
// (#room=R&password=P); the journey drives it through `window.podTest`.
import * as Y from "yjs";
import { WebrtcProvider } from "y-webrtc";

const params = new URLSearchParams(location.hash.slice(1));
const scheme = location.protocol === "https:" ? "wss" : "ws";
// The broker's STUN and TURN (neither protocol carries them).
const { iceServers } = await (await fetch("/ice")).json();

const doc = new Y.Doc();
const provider = new WebrtcProvider(params.get("room") ?? "notes", doc, {
  signaling: [`${scheme}://${location.host}/y-webrtc`],
  password: params.get("password") || null,
  peerOpts: { config: { iceServers } },
});
const text = doc.getText("notes");

globalThis.podTest = {
  append: (words) => text.insert(text.length, words),
  read: () => text.toString(),
  peers: () => provider.room?.webrtcConns.size ?? 0,
  leave: () => provider.destroy(),
};
document.getElementById("status").textContent = "ready";
