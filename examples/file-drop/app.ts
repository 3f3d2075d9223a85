/// <reference lib="dom" />
/**
 * The file drop pod: a file picked or dropped here goes to one peer or to
 * every peer of the room, in chunks over WebRTC data channels, with a
 * progress bar on both sides. The receiver keeps the chunks in memory and
 * offers them as a download (a `blob:` link, which the pod's sandbox
 * allows); nothing goes through the broker but signaling. On a broker with
 * a pod domain (the pod has its own origin, so storage) it keeps a list of
 * the files received, shown on the next visit; the bytes are not kept.
 *
 * The protocol, per pair of peers (the room's channels are reliable and
 * ordered, so nothing needs a sequence number):
 * - text `{"t":"offer","id":N,"name":"...","size":N,"type":"..."}` starts a
 *   transfer (`id` is the sender's own counter);
 * - binary: the id (4 bytes, big-endian), then the next bytes of the file;
 * - text `{"t":"ack","id":N,"got":N}` from the receiver after each chunk:
 *   the sender's progress, and its flow control (at most `WINDOW` bytes
 *   unacknowledged, so a large file is never read into memory at once);
 * - text `{"t":"refuse","id":N,"why":"..."}` ends a transfer.
 *
 * @module
 */

import { joinRoom, type Room, type RoomEvent } from "pod-broker/client";

/** Bytes of file in each binary message (plus a 4-byte header). */
const CHUNK = 60 * 1024;
/** Most bytes sent and not yet acknowledged, per transfer. */
const WINDOW = 16 * CHUNK;
/** Largest file accepted: it is held in memory until saved. */
const MAX_SIZE = 1024 ** 3;

const $ = <T extends HTMLElement = HTMLElement>(id: string) =>
  document.getElementById(id) as T;
const statusEl = $("status");
const peersEl = $("peers");
const toEl = $<HTMLSelectElement>("to");
const fileEl = $<HTMLInputElement>("file");
const dropEl = $("drop");
const transfersEl = $("transfers");
const hintEl = $("hint");
const shareEl = $<HTMLAnchorElement>("share");

showManifestName();

function setStatus(state: string, text: string): void {
  statusEl.dataset.state = state;
  statusEl.textContent = text;
}

/** A short form of a peer id. */
const nick = (id: string) => id.slice(0, 6);

/** A byte count for people: `3.1 MB`. */
function bytes(n: number): string {
  if (n < 1000) return `${n} B`;
  const units = ["kB", "MB", "GB"];
  let i = -1;
  do {
    n /= 1000;
    i++;
  } while (n >= 1000 && i < units.length - 1);
  return `${n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

// ---- Transfers and their rows. ------------------------------------------

/** One file going to, or coming from, one peer. */
interface Transfer {
  key: string;
  id: number;
  peer: string;
  direction: "out" | "in";
  name: string;
  size: number;
  type: string;
  /** Bytes acknowledged (out) or received (in). */
  done: number;
  state: "sending" | "receiving" | "done" | "failed";
  /** How many times the progress changed (for tests). */
  updates: number;
  /** The received chunks (in). */
  parts: ArrayBuffer[];
  /** Wakes a sender waiting for acknowledgements. */
  wake: () => void;
  row: HTMLLIElement;
  bar: HTMLProgressElement;
  info: HTMLSpanElement;
}

const transfers = new Map<string, Transfer>();
let nextId = 1;

function addTransfer(
  peer: string,
  direction: "out" | "in",
  id: number,
  name: string,
  size: number,
  type: string,
): Transfer {
  const row = document.createElement("li");
  row.className = "transfer";
  const title = document.createElement("span");
  title.className = "name";
  title.textContent = `${direction === "out" ? "→" : "←"} ${name}`;
  title.title = `${direction === "out" ? "to" : "from"} ${peer}`;
  const info = document.createElement("span");
  info.className = "info";
  const bar = document.createElement("progress");
  bar.max = Math.max(size, 1);
  bar.value = 0;
  row.append(title, info, bar);
  transfersEl.prepend(row);
  const transfer: Transfer = {
    key: `${direction}:${peer}:${id}`,
    id,
    peer,
    direction,
    name,
    size,
    type,
    done: 0,
    state: direction === "out" ? "sending" : "receiving",
    updates: 0,
    parts: [],
    wake: () => {},
    row,
    bar,
    info,
  };
  Object.assign(row.dataset, {
    id: String(id),
    direction,
    peerId: peer,
    state: transfer.state,
  });
  transfers.set(transfer.key, transfer);
  progress(transfer, 0);
  return transfer;
}

function progress(transfer: Transfer, done: number): void {
  transfer.done = done;
  transfer.updates++;
  transfer.bar.value = transfer.size === 0 ? 1 : done;
  const percent = transfer.size === 0
    ? 100
    : Math.floor(done / transfer.size * 100);
  transfer.row.dataset.progress = String(percent);
  transfer.info.textContent = `${nick(transfer.peer)} · ${bytes(done)} of ${
    bytes(transfer.size)
  } · ${percent}%`;
}

function finish(transfer: Transfer, state: "done" | "failed", why = ""): void {
  if (transfer.state === "done" || transfer.state === "failed") return;
  transfer.state = state;
  transfer.row.dataset.state = state;
  transfer.wake();
  if (state === "failed") {
    transfer.parts = [];
    transfer.info.textContent = `${nick(transfer.peer)} · failed: ${why}`;
  } else if (transfer.direction === "in") {
    received.add(transfer.name, transfer.size, transfer.peer);
    const blob = new Blob(transfer.parts, {
      type: transfer.type || "application/octet-stream",
    });
    transfer.parts = [];
    const url = URL.createObjectURL(blob);
    const save = document.createElement("a");
    save.className = "save";
    save.href = url;
    save.download = transfer.name;
    save.textContent = "Save";
    transfer.row.append(save);
    if (/^image\/(png|jpeg|gif|webp|avif)$/.test(blob.type)) {
      const preview = document.createElement("img");
      preview.src = url;
      preview.alt = "";
      transfer.row.append(preview);
    }
  }
}

// ---- Sending. ------------------------------------------------------------

async function sendFile(file: File, peer: string): Promise<void> {
  const transfer = addTransfer(
    peer,
    "out",
    nextId++,
    file.name,
    file.size,
    file.type,
  );
  const { id } = transfer;
  try {
    room.send(
      JSON.stringify({
        t: "offer",
        id,
        name: file.name,
        size: file.size,
        type: file.type,
      }),
      { to: peer },
    );
    for (let sent = 0; sent < file.size;) {
      while (sent - transfer.done >= WINDOW && transfer.state === "sending") {
        await new Promise<void>((wake) => transfer.wake = wake);
      }
      if (transfer.state !== "sending") return;
      const piece = new Uint8Array(
        await file.slice(sent, sent + CHUNK).arrayBuffer(),
      );
      const message = new Uint8Array(4 + piece.length);
      new DataView(message.buffer).setUint32(0, id);
      message.set(piece, 4);
      room.send(message, { to: peer });
      sent += piece.length;
    }
  } catch (error) {
    finish(transfer, "failed", (error as Error).message);
  }
}

function sendFiles(files: Iterable<File>): void {
  const to = toEl.value;
  const peers = to ? [to] : room.peers;
  if (peers.length === 0) {
    hintEl.textContent = "Nobody is connected yet: share the link.";
    return;
  }
  hintEl.textContent = "";
  for (const file of files) {
    for (const peer of peers) sendFile(file, peer);
  }
}

/** Takes files from the picker and from drops, once the room is joined. */
function wireInput(): void {
  fileEl.addEventListener("change", () => {
    if (fileEl.files) sendFiles(fileEl.files);
    fileEl.value = "";
  });
  dropEl.addEventListener("dragover", (event) => {
    event.preventDefault();
    dropEl.classList.add("over");
  });
  dropEl.addEventListener("dragleave", () => dropEl.classList.remove("over"));
  dropEl.addEventListener("drop", (event) => {
    event.preventDefault();
    dropEl.classList.remove("over");
    if (event.dataTransfer?.files) sendFiles(event.dataTransfer.files);
  });
}

// ---- Receiving. ----------------------------------------------------------

function reply(peer: string, message: object): void {
  try {
    room.send(JSON.stringify(message), { to: peer });
  } catch {
    // The peer is gone: its transfers fail on `peerleave`.
  }
}

function onText(peer: string, text: string): void {
  let message: Record<string, unknown>;
  try {
    message = JSON.parse(text);
  } catch {
    return;
  }
  const { t, id } = message;
  if (typeof id !== "number") return;
  if (t === "offer") {
    const { name, size, type } = message;
    if (transfers.has(`in:${peer}:${id}`)) return;
    const valid = typeof name === "string" && Number.isSafeInteger(size) &&
      (size as number) >= 0 && typeof type === "string";
    const transfer = addTransfer(
      peer,
      "in",
      id,
      valid ? name.slice(0, 255) || "file" : "file",
      valid ? size as number : 0,
      valid ? type.slice(0, 100) : "",
    );
    if (!valid || transfer.size > MAX_SIZE) {
      const why = valid ? `larger than ${bytes(MAX_SIZE)}` : "a bad offer";
      finish(transfer, "failed", why);
      reply(peer, { t: "refuse", id, why });
    } else if (transfer.size === 0) {
      finish(transfer, "done");
      reply(peer, { t: "ack", id, got: 0 });
    }
    return;
  }
  const transfer = transfers.get(`out:${peer}:${id}`);
  if (!transfer || transfer.state !== "sending") return;
  if (t === "ack" && typeof message.got === "number") {
    progress(transfer, Math.min(message.got, transfer.size));
    transfer.wake();
    if (transfer.done === transfer.size) finish(transfer, "done");
  } else if (t === "refuse") {
    finish(transfer, "failed", `refused: ${String(message.why).slice(0, 100)}`);
  }
}

function onChunk(peer: string, data: ArrayBuffer): void {
  if (data.byteLength < 4) return;
  const id = new DataView(data).getUint32(0);
  const transfer = transfers.get(`in:${peer}:${id}`);
  if (!transfer || transfer.state !== "receiving") return;
  const got = transfer.done + data.byteLength - 4;
  if (got > transfer.size) {
    finish(transfer, "failed", "more bytes than offered");
    reply(peer, { t: "refuse", id, why: "more bytes than offered" });
    return;
  }
  transfer.parts.push(data.slice(4));
  progress(transfer, got);
  reply(peer, { t: "ack", id, got });
  if (got === transfer.size) finish(transfer, "done");
}

// ---- The room. -----------------------------------------------------------

// After `nick` and `bytes` exist: it shows the list at once.
const received = receivedList("file-drop-received");

let room: Room;
try {
  room = await joinRoom();
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

$("me").textContent = room.peerId;
shareEl.href = shareEl.textContent = location.href;
const showOnline = () =>
  room.online
    ? setStatus(
      "connected",
      `Connected to the broker · session ${room.session}`,
    )
    : setStatus(
      "unreachable",
      "Broker gone: transfers go on; new peers can join once it is back.",
    );
showOnline();
room.addEventListener("onlinechange", showOnline);
wireInput();

room.addEventListener("peerjoin", (event) => {
  const { peerId } = event as RoomEvent;
  const li = document.createElement("li");
  li.dataset.peerId = peerId;
  li.dataset.state = "open";
  li.textContent = nick(peerId);
  li.title = peerId;
  const option = document.createElement("option");
  option.value = peerId;
  option.textContent = nick(peerId);
  peersEl.append(li);
  toEl.append(option);
});
room.addEventListener("peerleave", (event) => {
  const { peerId } = event as RoomEvent;
  for (const el of document.querySelectorAll(`[data-peer-id="${peerId}"]`)) {
    if (!el.classList.contains("transfer")) el.remove();
  }
  toEl.querySelector(`option[value="${peerId}"]`)?.remove();
  for (const transfer of transfers.values()) {
    if (transfer.peer === peerId) finish(transfer, "failed", "the peer left");
  }
});
room.addEventListener("message", (event) => {
  const { peerId, data } = event as RoomEvent;
  if (typeof data === "string") onText(peerId, data);
  else if (data) onChunk(peerId, data);
});

// Hooks for automated tests (tests/support/examples_journey.ts).
Object.assign(globalThis, {
  podDrop: {
    room,
    get peerId() {
      return room.peerId;
    },
    transfers() {
      return [...transfers.values()].map((
        { key, peer, direction, name, size, done, state, updates },
      ) => ({ key, peer, direction, name, size, done, state, updates }));
    },
  },
});

/**
 * The files received on earlier visits, from localStorage (at most 100,
 * newest first), and `add` to record one. Without storage (localStorage
 * throws at an opaque origin) it shows and keeps nothing.
 */
function receivedList(
  key: string,
): { add(name: string, size: number, peer: string): void } {
  const KEEP = 100;
  type Entry = { name: string; size: number; from: string; at: string };
  let entries: Entry[] = [];
  try {
    const saved: unknown = JSON.parse(localStorage.getItem(key) ?? "[]");
    if (Array.isArray(saved)) {
      entries = saved.filter((entry) =>
        typeof entry?.name === "string" && typeof entry?.size === "number" &&
        typeof entry?.from === "string" && typeof entry?.at === "string"
      ).slice(0, KEEP);
    }
  } catch {
    return { add() {} };
  }
  const list = $("received");
  for (const { name, size, from, at } of entries) {
    const li = document.createElement("li");
    li.textContent = `${name.slice(0, 200)} · ${bytes(size)} · from ${
      nick(from)
    } · ${at.slice(0, 16).replace("T", " ")}`;
    list.append(li);
  }
  $("received-title").hidden = entries.length === 0;
  return {
    add(name, size, peer) {
      const at = new Date().toISOString();
      entries = [{ name, size, from: peer, at }, ...entries].slice(0, KEEP);
      try {
        localStorage.setItem(key, JSON.stringify(entries));
      } catch {
        // Full or refused: the list is a nicety.
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
