// What the private room journeys (Chromium, and Firefox beside Chromium)
// add to the client's test pages.
import type { Win } from "./client_pages.ts";

/** What {@linkcode HOOKS} adds to a page's hooks. */
export type PrivateWin = Win & {
  P: { drops: number; tamper: boolean; sealed: number; plain: number };
};

/**
 * Counts the sealed signals that do not open (the client drops them) and
 * the signals sent sealed and in clear, and alters every sealed signal the
 * page sends while `P.tamper` is on, as a broker in the middle would. It
 * wraps what the harness wrapped; evaluate it before joining.
 */
export const HOOKS: string = `
const P = window.P = { drops: 0, tamper: false, sealed: 0, plain: 0 };
const decrypt = crypto.subtle.decrypt.bind(crypto.subtle);
crypto.subtle.decrypt = async (...args) => {
  try { return await decrypt(...args); } catch (error) { P.drops++; throw error; }
};
const send = WebSocket.prototype.send;
WebSocket.prototype.send = function (text) {
  const m = JSON.parse(text);
  if (m.type === "signal") {
    if (typeof m.data.sealed === "string") P.sealed++; else P.plain++;
    if (P.tamper && typeof m.data.sealed === "string") {
      const s = m.data.sealed, i = s.length >> 1;
      m.data.sealed = s.slice(0, i) + (s[i] === "A" ? "B" : "A") + s.slice(i + 1);
      text = JSON.stringify(m);
    }
  }
  return send.call(this, text);
};
`;
