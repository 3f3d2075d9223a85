/// <reference lib="dom" />
/**
 * The call pod: everyone in the room sees and hears everyone else, peer to
 * peer (a grid of tiles, one per camera and per shared screen), with the
 * microphone muted, the camera turned off, a screen shared, or the call
 * left. Nothing goes through the broker but signaling.
 *
 * A call needs the pod's own origin (a broker run with `--pod-domain`): at
 * the broker's host a pod's origin is opaque, and a browser refuses it a
 * camera. There the pod says so at once instead of waiting.
 *
 * Media go with `room.addTrack` (the camera and microphone in one stream,
 * a screen in another) and arrive as `track` events; a camera turned off
 * is a track removed (`trackend` at the others). What the tracks do not
 * say goes over the data channel, as text: `{"t":"state","mic":bool,
 * "camera":"<stream id>"|null,"screen":"<stream id>"|null}`, to every peer
 * on each change and to a newcomer when it arrives.
 *
 * @module
 */

import { joinRoom, type Room, type RoomEvent } from "pod-broker/client";

const $ = <T extends HTMLElement = HTMLElement>(id: string) =>
  document.getElementById(id) as T;
const grid = $("grid");
const notice = $("notice");
const buttons = {
  mic: $<HTMLButtonElement>("mic"),
  cam: $<HTMLButtonElement>("cam"),
  screen: $<HTMLButtonElement>("screen"),
  leave: $<HTMLButtonElement>("leave"),
};

function setStatus(state: string, text: string): void {
  $("status").dataset.state = state;
  $("status").textContent = text;
}

function say(text: string): void {
  notice.textContent = text;
  notice.hidden = text === "";
}

/** A short form of a peer id. */
const nick = (id: string) => id.slice(0, 6);

showManifestName();
const share = $<HTMLAnchorElement>("share");
share.href = share.textContent = location.href;
$("copy").addEventListener("click", async () => {
  try {
    await navigator.clipboard.writeText(location.href);
    $("copy").textContent = "Copied";
  } catch (error) {
    $("copy").textContent = `Cannot copy (${(error as Error).name})`;
  }
});

// ---- Tiles: one per camera and per screen, of each peer. ----------------

/** What a peer said about its media. */
interface PeerState {
  mic: boolean;
  camera: string | null;
  screen: string | null;
}

const states = new Map<string, PeerState>();
const tiles = new Map<string, { el: HTMLElement; stream: MediaStream }>();
const ME = "me";

/** The tile of `peerId`'s stream `streamId`, made when missing. */
function tileOf(peerId: string, streamId: string) {
  const key = `${peerId} ${streamId}`;
  let tile = tiles.get(key);
  if (!tile) {
    const el = document.createElement("figure");
    el.className = "tile";
    el.dataset.peerId = peerId;
    el.dataset.streamId = streamId;
    const video = document.createElement("video");
    video.autoplay = video.playsInline = true;
    video.muted = peerId === ME;
    const caption = document.createElement("figcaption");
    el.append(video, caption);
    grid.append(el);
    tile = { el, stream: new MediaStream() };
    video.srcObject = tile.stream;
    tiles.set(key, tile);
  }
  return tile;
}

/** Shows what a tile holds now; drops it when it holds nothing. */
function refresh(peerId: string, streamId: string): void {
  const key = `${peerId} ${streamId}`;
  const tile = tiles.get(key);
  if (!tile) return;
  const { el, stream } = tile;
  if (stream.getTracks().length === 0) {
    el.remove();
    tiles.delete(key);
    return;
  }
  const state = states.get(peerId);
  const kind = state?.screen === streamId
    ? "screen"
    : state?.camera === streamId
    ? "camera"
    : "";
  el.dataset.kind = kind;
  el.dataset.video = stream.getVideoTracks().length ? "on" : "off";
  el.dataset.mic = kind !== "camera" ? "" : state!.mic ? "on" : "off";
  el.querySelector("figcaption")!.textContent = `${
    peerId === ME ? "you" : nick(peerId)
  }${kind === "screen" ? " · screen" : ""}${
    el.dataset.mic === "off" ? " · muted" : ""
  }`;
  const video = el.querySelector("video")!;
  video.play().catch(() => {
    // No sound without a click first: play muted, and unmute on one.
    if (video.muted) return;
    video.muted = true;
    void video.play();
    say("Click anywhere to hear the others.");
    addEventListener("click", () => {
      for (const v of grid.querySelectorAll("video")) {
        v.muted = v.closest<HTMLElement>("figure")!.dataset.peerId === ME;
      }
      say("");
    }, { once: true });
  });
}

function refreshPeer(peerId: string): void {
  for (const key of [...tiles.keys()]) {
    if (key.startsWith(`${peerId} `)) {
      refresh(peerId, key.slice(peerId.length + 1));
    }
  }
}

/** A peer's state message, checked: anything else is ignored. */
function parseState(text: string): PeerState | null {
  try {
    const m = JSON.parse(text);
    const id = (v: unknown) =>
      v === null || (typeof v === "string" && v.length <= 64);
    if (
      m?.t === "state" && typeof m.mic === "boolean" && id(m.camera) &&
      id(m.screen)
    ) {
      return { mic: m.mic, camera: m.camera, screen: m.screen };
    }
  } catch {
    // Not JSON: not for us.
  }
  return null;
}

// ---- Calls need the pod's own origin. -----------------------------------

if (self.origin === "null" || !navigator.mediaDevices?.getUserMedia) {
  setStatus("error", "Calls need a broker with a pod domain");
  say(
    "This broker serves pods at its own address, where a browser gives a pod " +
      "no camera or microphone. A call works on a broker run with " +
      "--pod-domain, which gives each pod an origin of its own.",
  );
  throw new Error("Cannot start a call: the pod has no origin of its own");
}

// ---- The room. -----------------------------------------------------------

let room: Room;
try {
  // "#private" asks for a private call: the client makes its secret and
  // writes it to the fragment, so the link to share is the call's key.
  room = await joinRoom({ private: location.hash === "#private" });
} catch (error) {
  const message = (error as Error).message;
  if (message.includes("session_full")) {
    setStatus("full", "This call is full: no room for another peer.");
  } else if (message.includes("socket closed")) {
    setStatus("unreachable", "The signaling broker is unreachable.");
  } else setStatus("error", message);
  throw error;
}
share.href = share.textContent = location.href;
// Offered in an open room: the "#private" link starts a private one.
$("private").hidden = room.private;
$("private").addEventListener(
  "click",
  () => setTimeout(() => location.reload()),
);
$("me").textContent = nick(room.peerId);
$("me").title = room.peerId;
const showOnline = () =>
  room.online
    ? setStatus("connected", `In the call · ${room.peers.length} others`)
    : setStatus(
      "unreachable",
      "Broker gone: the call goes on; nobody new can join.",
    );
showOnline();
room.addEventListener("onlinechange", showOnline);

// This peer's media: the camera and microphone in `local`, a screen apart.
const local = new MediaStream();
// Hooks for automated tests (tests/support/call_journey.ts).
Object.assign(globalThis, { podCall: { room, local, states } });
let screen: MediaStream | null = null;
const track = (kind: string) =>
  local.getTracks().find((t) => t.kind === kind) ?? null;

function myState(): PeerState {
  return {
    mic: track("audio")?.enabled ?? false,
    camera: local.id,
    screen: screen?.id ?? null,
  };
}

function announce(to?: string): void {
  if (room.peers.length) {
    room.send(JSON.stringify({ t: "state", ...myState() }), { to });
  }
  states.set(ME, myState());
  refreshPeer(ME);
}

room.addEventListener("peerjoin", (event) => {
  announce((event as RoomEvent).peerId);
  showOnline();
});
room.addEventListener("peerleave", (event) => {
  const { peerId } = event as RoomEvent;
  for (const [key, { el }] of tiles) {
    if (key.startsWith(`${peerId} `)) {
      el.remove();
      tiles.delete(key);
    }
  }
  states.delete(peerId);
  showOnline();
});
room.addEventListener("message", (event) => {
  const { peerId, data } = event as RoomEvent;
  const state = typeof data === "string" ? parseState(data) : null;
  if (!state) return;
  states.set(peerId, state);
  refreshPeer(peerId);
});
room.addEventListener("track", (event) => {
  const { peerId, track, streams } = event as RoomEvent;
  const streamId = (streams[0]?.id ?? track!.id).slice(0, 64);
  tileOf(peerId, streamId).stream.addTrack(track!);
  refresh(peerId, streamId);
});
room.addEventListener("trackend", (event) => {
  const { peerId, track, streams } = event as RoomEvent;
  const streamId = (streams[0]?.id ?? track!.id).slice(0, 64);
  tiles.get(`${peerId} ${streamId}`)?.stream.removeTrack(track!);
  refresh(peerId, streamId);
});

/** Adds a local track to the call, its tile and the others. */
function send(t: MediaStreamTrack, stream: MediaStream): void {
  if (stream === local) local.addTrack(t);
  tileOf(ME, stream.id).stream.addTrack(t);
  room.addTrack(t, stream);
}

/** Takes a local track out of the call and stops it. */
function drop(t: MediaStreamTrack, stream: MediaStream): void {
  t.stop();
  room.removeTrack(t);
  stream.removeTrack(t);
  tiles.get(`${ME} ${stream.id}`)?.stream.removeTrack(t);
}

try {
  const media = await navigator.mediaDevices.getUserMedia({
    audio: true,
    video: true,
  });
  for (const t of media.getTracks()) send(t, local);
  buttons.mic.disabled = buttons.cam.disabled = false;
} catch (error) {
  say(
    `No camera or microphone (${
      (error as Error).name
    }): you still see and hear the others.`,
  );
}
buttons.screen.disabled = !navigator.mediaDevices.getDisplayMedia;
buttons.leave.disabled = false;
announce();

buttons.mic.addEventListener("click", () => {
  const mic = track("audio");
  if (!mic) return;
  mic.enabled = !mic.enabled;
  buttons.mic.textContent = mic.enabled ? "Mute" : "Unmute";
  buttons.mic.setAttribute("aria-pressed", String(!mic.enabled));
  announce();
});

buttons.cam.addEventListener("click", async () => {
  const cam = track("video");
  buttons.cam.disabled = true;
  try {
    if (cam) drop(cam, local);
    else {
      const [t] = (await navigator.mediaDevices.getUserMedia({ video: true }))
        .getVideoTracks();
      send(t!, local);
    }
    const on = track("video") !== null;
    buttons.cam.textContent = on ? "Camera off" : "Camera on";
    buttons.cam.setAttribute("aria-pressed", String(!on));
  } catch (error) {
    say(`No camera (${(error as Error).name}).`);
  } finally {
    buttons.cam.disabled = false;
    announce();
  }
});

function stopSharing(): void {
  if (!screen) return;
  for (const t of screen.getTracks()) drop(t, screen);
  screen = null;
  buttons.screen.textContent = "Share screen";
  buttons.screen.setAttribute("aria-pressed", "false");
  announce();
}

buttons.screen.addEventListener("click", async () => {
  if (screen) return stopSharing();
  try {
    // 15 frames a second is plenty for text and slides.
    const shared = await navigator.mediaDevices.getDisplayMedia({
      video: { frameRate: { ideal: 15 } },
    });
    screen = new MediaStream();
    for (const t of shared.getVideoTracks()) {
      t.addEventListener("ended", stopSharing);
      send(t, screen);
    }
    buttons.screen.textContent = "Stop sharing";
    buttons.screen.setAttribute("aria-pressed", "true");
    announce();
  } catch (error) {
    say(`No screen shared (${(error as Error).name}).`);
  }
});

buttons.leave.addEventListener("click", () => {
  room.leave();
  stopSharing();
  for (const t of local.getTracks()) t.stop();
  for (const { el } of tiles.values()) el.remove();
  tiles.clear();
  for (const button of Object.values(buttons)) button.disabled = true;
  setStatus("left", "You left the call. Reload the page to join again.");
});

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
