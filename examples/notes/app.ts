/// <reference lib="dom" />
/**
 * The notes pod: everyone on the same URL fragment edits one text, a Yjs
 * document shared with the y-webrtc provider. y-webrtc signals through the
 * broker that serves the pod (its `/y-webrtc`, the one line an app written
 * for y-webrtc changes) and takes the broker's STUN and TURN from `/ice`;
 * the text itself travels peer to peer. Yjs's awareness says who is here
 * and who is typing.
 *
 * Works on the broker's host (every pod there shares one namespace of
 * rooms, so the room name is random) and on a pod's own origin (with
 * `--pod-domain`), where the name you choose is kept in localStorage.
 *
 * @module
 */

import * as Y from "yjs";
import { WebrtcProvider } from "y-webrtc";

/** How long after the last keystroke a person still shows as typing. */
const TYPING_MS = 1_500;
const COLORS = ["#2f6fed", "#c53030", "#1a8f4c", "#b7791f", "#8e44ad"];

const $ = <T extends HTMLElement = HTMLElement>(id: string) =>
  document.getElementById(id) as T;
const notesEl = $<HTMLTextAreaElement>("notes");
const nameEl = $<HTMLInputElement>("name");
const peopleEl = $("people");
const statusEl = $("status");
const shareEl = $<HTMLAnchorElement>("share");

// The room is the URL fragment: a fresh, unguessable one when empty.
if (location.hash.length < 2) {
  location.hash = crypto.randomUUID().slice(0, 13);
}
const room = `notes-${location.hash.slice(1)}`;
shareEl.href = location.href;
shareEl.textContent = location.href;

const scheme = location.protocol === "https:" ? "wss" : "ws";
const { iceServers } = await (await fetch("/ice")).json();
const doc = new Y.Doc();
const provider = new WebrtcProvider(room, doc, {
  // The one line that names the broker.
  signaling: [`${scheme}://${location.host}/y-webrtc`],
  peerOpts: { config: { iceServers } },
});
const text = doc.getText("notes");
const awareness = provider.awareness;

nameEl.value = storedName() ?? `Guest ${Math.floor(Math.random() * 900 + 100)}`;
awareness.setLocalState({
  name: nameEl.value,
  color: COLORS[awareness.clientID % COLORS.length],
  editing: false,
});
nameEl.addEventListener("input", () => {
  awareness.setLocalStateField("name", nameEl.value.slice(0, 32));
  storeName(nameEl.value);
});

// The textarea and the shared text: a local edit becomes one delete and one
// insert (what changed between the common prefix and suffix); a remote one
// replaces the value, keeping the caret where it was in the text around it.
notesEl.value = text.toString();
let typingTimer: ReturnType<typeof setTimeout> | undefined;
notesEl.addEventListener("input", () => {
  const before = text.toString();
  const after = notesEl.value;
  let start = 0;
  while (start < before.length && before[start] === after[start]) start++;
  let end = 0;
  while (
    end < before.length - start && end < after.length - start &&
    before[before.length - 1 - end] === after[after.length - 1 - end]
  ) end++;
  doc.transact(() => {
    text.delete(start, before.length - start - end);
    text.insert(start, after.slice(start, after.length - end));
  });
  awareness.setLocalStateField("editing", true);
  clearTimeout(typingTimer);
  typingTimer = setTimeout(
    () => awareness.setLocalStateField("editing", false),
    TYPING_MS,
  );
});
text.observe((event) => {
  if (event.transaction.local) return;
  const caret = Y.createRelativePositionFromTypeIndex(
    text,
    notesEl.selectionStart,
  );
  notesEl.value = text.toString();
  const at = Y.createAbsolutePositionFromRelativePosition(caret, doc);
  if (at !== null && document.activeElement === notesEl) {
    notesEl.setSelectionRange(at.index, at.index);
  }
});

// Who is here: everyone's awareness state, this visitor first.
function showPeople(): void {
  const items: HTMLLIElement[] = [];
  for (const [id, state] of awareness.getStates()) {
    if (typeof state?.name !== "string") continue;
    const item = document.createElement("li");
    item.textContent = state.name.slice(0, 32); // never parsed as HTML
    item.dataset.me = String(id === awareness.clientID);
    item.dataset.editing = String(state.editing === true);
    if (/^#[0-9a-f]{6}$/.test(state.color)) {
      item.style.setProperty("--color", state.color);
    }
    if (id === awareness.clientID) items.unshift(item);
    else items.push(item);
  }
  peopleEl.replaceChildren(...items);
}
awareness.on("change", showPeople);
showPeople();

// How many others this visitor is linked with, peer to peer.
function showLinks(count: number): void {
  statusEl.dataset.state = count === 0 ? "alone" : "connected";
  statusEl.textContent = count === 0
    ? "Waiting for others on this link"
    : `Editing with ${count} other${count === 1 ? "" : "s"}, peer to peer`;
}
provider.on("peers", ({ webrtcPeers }: { webrtcPeers: string[] }) => {
  showLinks(webrtcPeers.length);
});
showLinks(0);

// localStorage exists on a pod's own origin only (the broker host's pods
// have an opaque origin, which has none).
function storedName(): string | null {
  try {
    return localStorage.getItem("notes-name");
  } catch {
    return null;
  }
}

function storeName(name: string): void {
  try {
    localStorage.setItem("notes-name", name);
  } catch {
    // no storage here
  }
}
