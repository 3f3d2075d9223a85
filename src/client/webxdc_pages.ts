/**
 * The other pages of a webxdc app. A pod is one document, so `pod-broker
 * import` builds each other page of the app (an `.html` beside its
 * `index.html`) into a `<template data-pod-page="page.html">` that holds
 * it as an `<iframe srcdoc>`, with a one-line `webxdc.js` that asks this
 * page for `window.webxdc` (see `src/bundler/xdc_build.ts`). A click on a
 * link to such a page shows it in place of the app's page, as a messenger
 * would navigate to it: it fills the window, and it gets this page's
 * `window.webxdc` (its update listener replaces the first page's, as a
 * new page's would) and the app's files. A link back to `index.html`
 * loads the pod again.
 *
 * @module
 */

import { bundlePath } from "./webxdc_assets.ts";

/**
 * Where a page shown in a frame finds this page, to be given
 * `window.webxdc` (the key the bundler's one-line `webxdc.js` names: the
 * client imports nothing, so both name it, and the browser journeys fail
 * when they differ).
 */
export const PAGE_KEY: unique symbol = Symbol.for("pod-broker.webxdc.page");

/** The attribute that names a page's template. */
const PAGE_ATTRIBUTE = "data-pod-page";

/**
 * Follows links to the app's other pages, in this page and in each page
 * shown, and lets each shown page take `webxdc` and its files.
 *
 * @param webxdc The API to give each page.
 * @param serveFiles Serves the app's files in a page's window, if any.
 */
export function servePages(
  webxdc: object,
  serveFiles?: (target: Window) => void,
): void {
  const home = location.href;
  const follow = (target: Window) =>
    target.document.addEventListener("click", (event) => {
      const page = linkedPage(event, home);
      if (page === undefined) return;
      event.preventDefault();
      if (page === "index.html") location.reload();
      else show(page);
    });
  Object.defineProperty(globalThis, PAGE_KEY, {
    value: (target: Window) => {
      Object.defineProperty(target, "webxdc", {
        value: webxdc,
        enumerable: true,
      });
      serveFiles?.(target);
      follow(target);
    },
  });
  follow(window);
}

/** The app's page a plain click on a link goes to, if the pod has it. */
function linkedPage(event: MouseEvent, home: string): string | undefined {
  if (
    event.defaultPrevented || event.button !== 0 || event.ctrlKey ||
    event.metaKey || event.shiftKey || event.altKey
  ) return undefined;
  const link = (event.target as Element | null)?.closest?.("a[href]");
  const target = link?.getAttribute("target");
  if (!link || (target && target !== "_self")) return undefined;
  const page = bundlePath(link.getAttribute("href")!, home);
  if (page === "" || page === "index.html") return "index.html";
  return page !== undefined && template(page) ? page : undefined;
}

function template(page: string): HTMLTemplateElement | undefined {
  return [...document.querySelectorAll("template")].find((element) =>
    element.getAttribute(PAGE_ATTRIBUTE) === page
  );
}

/** Shows `page` in place of the app's page. */
function show(page: string): void {
  const frame = template(page)!.content.querySelector("iframe");
  if (!frame) return;
  const shown = document.importNode(frame, false);
  shown.style.cssText =
    "position:fixed;inset:0;width:100%;height:100%;border:0;background:#fff";
  document.body.replaceChildren(shown);
}
