/**
 * The files of a webxdc app that its scripts load by path. A messenger
 * serves an app's bundle, so an app may build a path at run time
 * (`img.src = "img/" + piece + ".svg"`, `fetch("data/words.json")`), which
 * no build can see. `pod-broker import` keeps such files in the pod (see
 * `src/bundler/xdc_assets.ts`), and this module answers those paths with
 * `blob:` URLs of them, which the pod's policy allows, before any load
 * starts: the `src`, `href` and `poster` an app sets (as a property, with
 * `setAttribute`, or in markup given to `innerHTML`, `outerHTML` and
 * `insertAdjacentHTML`), and the URLs given to `new Audio`, `fetch` and
 * `XMLHttpRequest`. A path the bundle does not hold is left as it is.
 *
 * @module
 */

/**
 * Where `import` leaves the files for the runtime (the key
 * `src/bundler/xdc_assets.ts` writes: the client imports nothing, so both
 * name it, and the browser journeys fail when they differ).
 */
export const ASSETS_KEY: unique symbol = Symbol.for("pod-broker.webxdc.assets");

/** The files: path in the bundle (`img/a.svg`) to media type and base64. */
export type Assets = Record<string, readonly [string, string]>;

/** Attributes whose value is one URL that may name a bundle file. */
const URL_ATTRIBUTES = new Set(["src", "href", "poster"]);
/** Such an attribute, quoted, in markup. */
const MARKUP_URL = /(\s(?:src|href|poster)\s*=\s*)(?:"([^"]*)"|'([^']*)')/gi;

/**
 * The bundle path a URL names, relative to the page's folder, or undefined
 * when it names anything else (another origin, a scheme of its own).
 *
 * @param value A URL as the app wrote it.
 * @param page The page's URL.
 * @returns The path in the bundle (`img/a.svg`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bundlePath } from "./webxdc_assets.ts";
 *
 * const page = "https://p.example/";
 * assert.equal(bundlePath("./img/a.svg?v=2", page), "img/a.svg");
 * assert.equal(bundlePath("/assets/b.png", page), "assets/b.png");
 * assert.equal(bundlePath("data:,x", page), undefined);
 * assert.equal(bundlePath("https://o.example/a.svg", page), undefined);
 * ```
 */
export function bundlePath(value: string, page: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value, page);
  } catch {
    return undefined;
  }
  const base = new URL(page);
  if (url.origin !== base.origin || !/^https?:$/.test(url.protocol)) {
    return undefined;
  }
  const folder = base.pathname.replace(/[^/]*$/, "");
  const path = url.pathname.startsWith(folder)
    ? url.pathname.slice(folder.length)
    : url.pathname.slice(1);
  try {
    return decodeURIComponent(path);
  } catch {
    return undefined;
  }
}

/**
 * Answers the app's loads of its bundle files with `blob:` URLs, each made
 * once, when first asked for.
 *
 * @param assets The files `import` kept.
 * @returns What serves them in a window: this page's, or that of another
 * page of the app shown in a frame (paths are relative to this page).
 */
export function assetServer(assets: Assets): (target: Window) => void {
  const made = new Map<string, string>();
  const page = location.href;
  const swap = (value: string): string => {
    const path = bundlePath(value, page);
    const file = path === undefined || !Object.hasOwn(assets, path)
      ? undefined
      : assets[path]!;
    if (file === undefined) return value;
    let url = made.get(path!);
    if (url === undefined) {
      const bytes = Uint8Array.from(atob(file[1]), (c) => c.charCodeAt(0));
      url = URL.createObjectURL(new Blob([bytes], { type: file[0] }));
      made.set(path!, url);
    }
    return url;
  };
  const markup = (html: string): string =>
    html.replace(
      MARKUP_URL,
      (whole, head: string, double?: string, single?: string) => {
        const value = double ?? single ?? "";
        const url = swap(value);
        return url === value ? whole : `${head}"${url}"`;
      },
    );
  return (target: Window) =>
    serveIn(target as Window & typeof globalThis, swap, markup);
}

/** Puts `swap` and `markup` on the loads of one window. */
function serveIn(
  w: Window & typeof globalThis,
  swap: (value: string) => string,
  markup: (html: string) => string,
): void {
  for (
    const [type, name] of [
      [w.HTMLImageElement, "src"],
      [w.HTMLMediaElement, "src"],
      [w.HTMLSourceElement, "src"],
      [w.HTMLVideoElement, "poster"],
      [w.HTMLLinkElement, "href"],
    ] as const
  ) wrapSetter(type.prototype, name, swap);
  for (const name of ["innerHTML", "outerHTML"]) {
    wrapSetter(w.Element.prototype, name, markup);
  }
  const { setAttribute, insertAdjacentHTML } = w.Element.prototype;
  w.Element.prototype.setAttribute = function (name, value) {
    const url = URL_ATTRIBUTES.has(name.toLowerCase());
    setAttribute.call(this, name, url ? swap(String(value)) : value);
  };
  w.Element.prototype.insertAdjacentHTML = function (where, html) {
    insertAdjacentHTML.call(this, where, markup(String(html)));
  };
  const NativeAudio = w.Audio;
  const Audio = function (src?: string) {
    return new NativeAudio(src === undefined ? src : swap(String(src)));
  } as unknown as typeof NativeAudio;
  Audio.prototype = NativeAudio.prototype;
  w.Audio = Audio;
  const { fetch } = w;
  w.fetch = (input, init) =>
    fetch(
      typeof input === "string" || input instanceof URL
        ? swap(String(input))
        : input,
      init,
    );
  const { open } = w.XMLHttpRequest.prototype;
  w.XMLHttpRequest.prototype.open = function (
    this: XMLHttpRequest,
    method: string,
    url: string | URL,
    ...rest: [boolean?, string?, string?]
  ) {
    return (open as (...args: unknown[]) => void).call(
      this,
      method,
      swap(String(url)),
      ...rest,
    );
  } as typeof open;
}

/** Makes the setter of `name` on `prototype` pass string values through `map`. */
function wrapSetter(
  prototype: object,
  name: string,
  map: (value: string) => string,
): void {
  const descriptor = Object.getOwnPropertyDescriptor(prototype, name);
  const set = descriptor?.set;
  if (!set) return;
  Object.defineProperty(prototype, name, {
    ...descriptor,
    set(this: unknown, value: unknown) {
      set.call(this, typeof value === "string" ? map(value) : value);
    },
  });
}
