/**
 * The webxdc runtime as a page sees it: this module, bundled into a
 * classic script, stands for the `webxdc.js` of a webxdc app that
 * `pod-broker import` built into a pod. It sets `window.webxdc` at once
 * (`selfAddr` and `selfName` ready before the app's own scripts run), then
 * replays the instance's stored log and joins the instance's room (the URL
 * fragment names the instance, as for `joinRoom`), whose data channels
 * carry the updates (see `webxdc_runtime.ts` and `webxdc_sync.ts`).
 *
 * Before that, it serves the app's files that `import` kept to the paths
 * its scripts build (`webxdc_assets.ts`), and shows the app's other pages
 * when a link leads there (`webxdc_pages.ts`).
 *
 * `selfAddr` is kept in `localStorage` on a pod's own origin (stable per
 * browser and pod); where the page has no storage (the broker's host) it
 * lasts as long as the page, and the console says so once.
 *
 * @module
 */

import { joinRoom } from "./join.ts";
import type { Room } from "./room.ts";
import type { RoomEvent } from "./events.ts";
import { defaultSession } from "./session.ts";
import { type RuntimeWire, WebxdcRuntime } from "./webxdc_runtime.ts";
import { importFiles, sendToChat } from "./webxdc_files.ts";
import { type Assets, ASSETS_KEY, assetServer } from "./webxdc_assets.ts";
import { servePages } from "./webxdc_pages.ts";
import { openStore, type Store } from "./webxdc_store.ts";
import { MAX_SYNC_MESSAGE } from "./webxdc_sync.ts";
import { toBase64Url } from "./webxdc_sign.ts";

const ADDRESS_KEY = "pod-webxdc-self";

/** This browser's address and name for the pod. */
function identity(): { selfAddr: string; selfName: string } {
  const fresh = toBase64Url(crypto.getRandomValues(new Uint8Array(12)));
  let selfAddr = fresh;
  try {
    selfAddr = localStorage.getItem(ADDRESS_KEY) ?? fresh;
    if (selfAddr === fresh) localStorage.setItem(ADDRESS_KEY, fresh);
  } catch {
    // No storage here (an opaque origin): the address lasts as long as the page.
  }
  return { selfAddr, selfName: `Visitor ${selfAddr.slice(0, 4)}` };
}

/** The store, and the one console line when it keeps nothing. */
async function store(): Promise<Store> {
  const opened = await openStore();
  if (!opened.persistent) {
    console.info(
      "webxdc: this page has no storage here, so updates live only while it is open (open the pod on its own origin to keep them)",
    );
  }
  return opened;
}

/** Joins the instance's room and connects it to the runtime. */
async function connect(
  runtime: WebxdcRuntime,
  instance: string,
  wire: { room?: Room },
): Promise<void> {
  await runtime.ready;
  const room = wire.room = await joinRoom({
    session: instance,
    maxMessageBytes: MAX_SYNC_MESSAGE,
  });
  room.addEventListener(
    "peerjoin",
    (event: Event) => runtime.peerJoined((event as RoomEvent).peerId),
  );
  room.addEventListener(
    "peerleave",
    (event: Event) => runtime.peerLeft((event as RoomEvent).peerId),
  );
  room.addEventListener(
    "message",
    (event: Event) =>
      runtime.message(
        (event as RoomEvent).peerId,
        (event as RoomEvent).data as string | ArrayBuffer,
      ),
  );
  for (const peer of room.peers) runtime.peerJoined(peer);
}

function install(): void {
  const holder = globalThis as { [ASSETS_KEY]?: Assets };
  const assets = holder[ASSETS_KEY];
  delete holder[ASSETS_KEY];
  const serveFiles = assets && assetServer(assets);
  serveFiles?.(window);
  const instance = defaultSession();
  const wired: { room?: Room } = {};
  const send = (peer: string, data: string | Uint8Array) => {
    try {
      wired.room?.send(data, { to: peer });
    } catch {
      // The peer left meanwhile.
    }
  };
  const wire: RuntimeWire = {
    send,
    sendBinary: send,
    // A peer cut is disconnected, and again whenever it connects anew.
    close: (peer) => wired.room?.disconnect(peer),
  };
  const runtime = new WebxdcRuntime({
    instance,
    ...identity(),
    store: store(),
    wire,
    onCut: (peer, why) => console.warn(`webxdc: peer ${peer} cut: ${why}`),
  });
  const webxdc = Object.freeze({ ...runtime.api, importFiles, sendToChat });
  Object.defineProperty(globalThis, "webxdc", {
    value: webxdc,
    enumerable: true,
  });
  servePages(webxdc, serveFiles);
  connect(runtime, instance, wired).catch((error) =>
    console.warn(`webxdc: working offline: ${(error as Error).message}`)
  );
}

install();
