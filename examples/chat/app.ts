/// <reference lib="dom" />
/**
 * The chat pod: everyone on the same URL fragment shares one room, and
 * every line typed goes to every peer over WebRTC data channels. The
 * browser client does the WebRTC part (negotiation, ICE servers and
 * restarts, the broker's reconnects); this file is the user interface.
 *
 * Built for the pod sandbox: no network but the signaling socket, no forms
 * (the input is a plain input and a button). On a broker with a pod domain
 * the pod has its own origin, and the chat keeps each session's history in
 * localStorage; on a plain broker (an opaque origin, no storage) it has none.
 *
 * @module
 */

import { joinRoom, type Room, type RoomEvent } from "pod-broker/client";

/** Longest message shown or sent, in UTF-16 code units. */
const MAX_TEXT = 2000;

const $ = <T extends HTMLElement = HTMLElement>(id: string) =>
  document.getElementById(id) as T;
const statusEl = $("status");
const meEl = $("me");
const peersEl = $("peers");
const logEl = $("log");
const inputEl = $<HTMLInputElement>("input");
const shareEl = $<HTMLAnchorElement>("share");

showManifestName();

function setStatus(state: string, text: string): void {
  statusEl.dataset.state = state;
  statusEl.textContent = text;
}

/** A short form of a peer id, for the log and the list. */
const nick = (id: string) => id.slice(0, 6);

function addToLog(el: HTMLElement): void {
  const atBottom =
    logEl.scrollHeight - logEl.scrollTop - logEl.clientHeight < 40;
  logEl.append(el);
  if (atBottom) logEl.scrollTop = logEl.scrollHeight;
}

function showMessage(from: string, text: string): void {
  const el = document.createElement("div");
  el.className = "msg";
  el.dataset.from = from;
  // The sender is drawn by CSS, so textContent is exactly the message.
  el.dataset.nick = from === "me" ? "me" : nick(from);
  el.textContent = text; // never parsed as HTML
  addToLog(el);
}

function note(text: string): void {
  const el = document.createElement("div");
  el.className = "note";
  el.textContent = text;
  addToLog(el);
}

let room: Room;
try {
  // "#private" asks for a private room: the client makes its secret and
  // writes it to the fragment, so the link to share is the room's key.
  room = await joinRoom({ private: location.hash === "#private" });
} catch (error) {
  const message = (error as Error).message;
  if (message.includes("session_full")) {
    setStatus("full", "This session is full: no room for another peer.");
  } else if (message.includes("socket closed")) {
    setStatus("unreachable", "The signaling broker is unreachable.");
  } else {
    setStatus("error", message);
  }
  throw error;
}

meEl.textContent = room.peerId;
const history = loadHistory(`chat-history:${room.session}`);
shareEl.href = shareEl.textContent = location.href;
// Offered in an open room: the "#private" link starts a private one.
$("private").hidden = room.private;
$("private").addEventListener(
  "click",
  () => setTimeout(() => location.reload()),
);
const showOnline = () =>
  room.online
    ? setStatus(
      "connected",
      `Connected to the broker · session ${room.session}`,
    )
    : setStatus(
      "unreachable",
      "Broker gone: chats go on; new peers can join once it is back.",
    );
showOnline();
room.addEventListener("onlinechange", showOnline);

// ---- Peers: one list entry per peer with an open channel. ---------------
const entries = new Map<string, HTMLLIElement>();

/** Shows a peer's connection: `open` (with its route) or the RTC state. */
function showPeer(id: string): void {
  const li = entries.get(id);
  if (!li) return;
  const { state, route } = room.connection(id);
  // The channel is open while the peer is in the room, even when ICE is
  // briefly disconnected; show that state then, so a restart is visible.
  li.dataset.state = state === "disconnected" || state === "failed"
    ? state
    : "open";
  if (route) {
    li.dataset.route = route;
    li.title = `${id} (${route})`;
  }
}

room.addEventListener("peerjoin", (event) => {
  const { peerId } = event as RoomEvent;
  const li = document.createElement("li");
  li.dataset.peerId = peerId;
  li.textContent = nick(peerId);
  li.title = peerId;
  entries.set(peerId, li);
  peersEl.append(li);
  showPeer(peerId);
  note(`${nick(peerId)} connected`);
});
room.addEventListener("connectionchange", (event) => {
  showPeer((event as RoomEvent).peerId);
});
room.addEventListener("peerleave", (event) => {
  const { peerId } = event as RoomEvent;
  entries.get(peerId)?.remove();
  entries.delete(peerId);
  note(`${nick(peerId)} left`);
});

// ---- Messages: `{"text": "..."}`, anything else is ignored. --------------
room.addEventListener("message", (event) => {
  const { peerId, data } = event as RoomEvent;
  if (typeof data !== "string") return;
  let text: unknown;
  try {
    text = JSON.parse(data).text;
  } catch {
    return;
  }
  if (typeof text === "string" && text) {
    showMessage(peerId, text.slice(0, MAX_TEXT));
    history.add(peerId, text.slice(0, MAX_TEXT));
  }
});

function sendChat(): void {
  const text = inputEl.value.trim().slice(0, MAX_TEXT);
  if (!text) return;
  room.send(JSON.stringify({ text }));
  showMessage("me", text);
  history.add("me", text);
  if (room.peers.length === 0) {
    note("nobody is connected yet: message not delivered");
  }
  inputEl.value = "";
  inputEl.focus();
}
inputEl.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.isComposing) {
    event.preventDefault();
    sendChat();
  }
});
$("send").addEventListener("click", sendChat);
inputEl.focus();

// Hooks for automated tests (tests/support/examples_journey.ts).
Object.assign(globalThis, {
  podChat: {
    room,
    get peerId() {
      return room.peerId;
    },
    get session() {
      return room.session;
    },
    /** Each open peer's route: `{ id: "direct" | "relayed" | null }`. */
    routes() {
      return Object.fromEntries(
        room.peers.map((id) => [id, room.connection(id).route]),
      );
    },
    openChannels() {
      return room.peers.length;
    },
  },
});

/**
 * A session's last lines in localStorage, shown again on load. Without
 * storage (localStorage throws at an opaque origin) it keeps nothing.
 */
function loadHistory(key: string): { add(from: string, text: string): void } {
  const KEEP = 200;
  let lines: { from: string; text: string }[] = [];
  try {
    const saved: unknown = JSON.parse(localStorage.getItem(key) ?? "[]");
    if (Array.isArray(saved)) {
      lines = saved.filter((line) =>
        typeof line?.from === "string" && typeof line?.text === "string"
      ).slice(-KEEP);
    }
  } catch {
    return { add() {} };
  }
  for (const { from, text } of lines) {
    showMessage(from, text.slice(0, MAX_TEXT));
  }
  return {
    add(from, text) {
      lines = [...lines.slice(1 - KEEP), { from, text }];
      try {
        localStorage.setItem(key, JSON.stringify(lines));
      } catch {
        // Full or refused: the history is a nicety.
      }
    },
  };
}

/** Shows the name the pod was signed with, if it has one. */
function showManifestName(): void {
  try {
    const b64 = $("__POD_MANIFEST_B64")?.textContent?.trim();
    if (!b64) return;
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const { name } = JSON.parse(new TextDecoder().decode(bytes));
    if (typeof name === "string" && name) {
      $("title").textContent = name;
      document.title = name;
    }
  } catch {
    // Unsigned or malformed: keep the default title.
  }
}
