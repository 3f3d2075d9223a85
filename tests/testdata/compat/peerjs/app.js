// A PeerJS peer that signals through the broker serving the pod: the one
// line an app written for PeerJS changes is the Peer's options (host, port
// and path of the broker). The id comes from the URL fragment (#id=ID), or
// from the broker's /peerjs/id; the journey drives it through
// `window.podTest`.
import { Peer } from "peerjs";

const id = new URLSearchParams(location.hash.slice(1)).get("id");
const secure = location.protocol === "https:";
// The broker's STUN and TURN (neither protocol carries them).
const { iceServers } = await (await fetch("/ice")).json();
const options = {
  host: location.hostname,
  port: Number(location.port) || (secure ? 443 : 80),
  path: "/",
  secure,
  config: { iceServers },
};
const peer = id ? new Peer(id, options) : new Peer(options);

const events = [];
const received = [];
const links = new Map();
const wire = (link) => {
  links.set(link.peer, link);
  link.on("data", (data) => received.push([link.peer, data]));
};
peer.on("open", (opened) => events.push(`open:${opened}`));
peer.on("error", (error) => events.push(`error:${error.type}`));
peer.on("disconnected", () => events.push("disconnected"));
peer.on("connection", wire);

const until = (check, what) =>
  new Promise((resolve, reject) => {
    const started = Date.now();
    const look = () => {
      const value = check();
      if (value) resolve(value);
      else if (Date.now() - started > 15_000) reject(new Error(what));
      else setTimeout(look, 20);
    };
    look();
  });

globalThis.podTest = {
  events,
  received,
  id: () => peer.id,
  opened: () =>
    until(() => events.find((e) => /^(open|error):/.test(e)), "no open"),
  connect: (to) =>
    new Promise((resolve, reject) => {
      const link = peer.connect(to, { metadata: { from: peer.id } });
      wire(link);
      link.on("open", () => resolve(to));
      link.on("error", (error) => reject(error));
    }),
  linked: (to) => until(() => links.get(to)?.open, `no link to ${to}`),
  send: (to, data) => links.get(to).send(data),
  reconnect: async () => {
    peer.disconnect();
    await until(() => events.includes("disconnected"), "not disconnected");
    const before = events.length;
    peer.reconnect();
    await until(
      () => events.slice(before).find((e) => /^(open|error):/.test(e)),
      "no reopen",
    );
    return events.slice(before);
  },
};
document.getElementById("status").textContent = "ready";
