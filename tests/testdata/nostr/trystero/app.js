// A Trystero room (its Nostr strategy), signaling only through the broker
// that serves the pod: the one setting an app written for Trystero adds is
// `relayConfig.urls`. The room comes from the URL fragment (#room=R); the
// journey drives it through `window.podTest`.
import { joinRoom, selfId } from "trystero/nostr";

const params = new URLSearchParams(location.hash.slice(1));
const scheme = location.protocol === "https:" ? "wss" : "ws";
// The broker's STUN and TURN (Nostr carries none).
const { iceServers } = await (await fetch("/ice")).json();

const room = joinRoom(
  {
    appId: "pod-broker-journey",
    relayConfig: { urls: [`${scheme}://${location.host}/nostr`] },
    rtcConfig: { iceServers },
  },
  params.get("room") ?? "room",
);
const chat = room.makeAction("chat");
const received = [];
chat.onMessage = (data, { peerId }) => received.push([peerId, data]);

globalThis.podTest = {
  selfId,
  peers: () => Object.keys(room.getPeers()).sort(),
  send: (data) => chat.send(data),
  received,
};
document.getElementById("status").textContent = "ready";
