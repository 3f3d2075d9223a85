/**
 * The page `pod-broker init` writes: two tabs of it are two peers of one
 * room, and each shows what the other types.
 *
 * @module
 */

/** `&`, `<`, `>` and `"` as HTML character references. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The files of a new pod folder but its `deno.json`.
 *
 * @param name The pod's name, for its title.
 * @returns File name to text.
 */
export function initFiles(name: string): Record<string, string> {
  return {
    "index.html": `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${escapeHtml(name)}</title>
    <link rel="icon" href="data:,">
    <link rel="stylesheet" href="style.css">
    <script type="module" src="app.ts"></script>
  </head>
  <body>
    <h1>${escapeHtml(name)}</h1>
    <p>You are <b id="me">…</b>. Peers: <span id="peers">none yet</span></p>
    <input id="text" placeholder="Say something and press Enter">
    <ul id="log"></ul>
  </body>
</html>
`,
    "app.ts": `import { joinRoom, type RoomEvent } from "pod-broker/client";

const $ = (id: string) => document.getElementById(id)!;
const room = await joinRoom(); // the room is the URL fragment (#...)
$("me").textContent = room.peerId;

const showPeers = () => {
  $("peers").textContent = room.peers.join(", ") || "none yet";
};
room.addEventListener("peerjoin", showPeers);
room.addEventListener("peerleave", showPeers);

function show(from: string, text: string) {
  const item = document.createElement("li");
  item.textContent = \`\${from}: \${text}\`; // text, never HTML
  $("log").append(item);
}
room.addEventListener("message", (event) => {
  const { peerId, data } = event as RoomEvent;
  if (typeof data === "string") show(peerId, data);
});

const input = $("text") as HTMLInputElement;
input.addEventListener("keydown", (event) => {
  if (event.key !== "Enter" || !input.value) return;
  room.send(input.value); // to every peer
  show("me", input.value);
  input.value = "";
});
`,
    "style.css": `body {
  font: 16px system-ui, sans-serif;
  max-width: 40em;
  margin: 2em auto;
}
input {
  width: 100%;
  font: inherit;
  padding: .4em;
}
`,
  };
}
