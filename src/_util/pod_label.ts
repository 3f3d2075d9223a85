/**
 * The DNS label of a pod on a pod domain (the `podDomain` option): the
 * lowercase RFC 4648 base32, no padding, of the id's 12 ASCII bytes (DNS
 * names ignore case; pod ids do not), and the check of the domain itself.
 *
 * @module
 */

import { isPodId, POD_ID_LENGTH } from "./id.ts";

const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

/** Characters of a pod's label: 12 bytes of base32, unpadded. */
export const POD_LABEL_LENGTH: number = Math.ceil(POD_ID_LENGTH * 8 / 5);

/**
 * A pod domain as the option takes it: a DNS name of letters, digits and
 * hyphens, lower-cased, a trailing dot dropped, short enough that
 * `LABEL.DOMAIN` is a valid name; or null.
 *
 * @param value What the caller passed.
 * @returns The domain, or null when it is not one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { podDomainOf } from "./pod_label.ts";
 *
 * assert.equal(podDomainOf("Pods.Example.com."), "pods.example.com");
 * assert.equal(podDomainOf("localhost"), "localhost");
 * assert.equal(podDomainOf("*.example.com"), null);
 * ```
 */
export function podDomainOf(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const domain = value.toLowerCase().replace(/\.$/, "");
  const label = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
  if (domain.length > 253 - POD_LABEL_LENGTH - 1) return null;
  return domain.split(".").every((part) => label.test(part)) ? domain : null;
}

/**
 * The DNS label of a pod: lowercase base32 of its id's bytes.
 *
 * @param id A pod id (12 ASCII characters).
 * @returns 20 characters of `[a-z2-7]`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { podIdOfLabel, podLabel } from "./pod_label.ts";
 *
 * assert.equal(podLabel("foobar"), "mzxw6ytboi");
 * assert.equal(podIdOfLabel(podLabel("AbCdEf123456")), "AbCdEf123456");
 * ```
 */
export function podLabel(id: string): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (let i = 0; i < id.length; i++) {
    value = (value << 8) | (id.charCodeAt(i) & 0xff);
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += BASE32[(value >>> bits) & 31];
    }
    value &= (1 << bits) - 1;
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/**
 * The pod id a label names, or null when it names none (not 20 base32
 * characters, not the canonical encoding, or not a pod id's shape).
 *
 * @param label A DNS label, lower case.
 * @returns The id, or null.
 */
export function podIdOfLabel(label: string): string | null {
  if (label.length !== POD_LABEL_LENGTH || !/^[a-z2-7]+$/.test(label)) {
    return null;
  }
  let id = "";
  let bits = 0;
  let value = 0;
  for (const char of label) {
    value = (value << 5) | BASE32.indexOf(char);
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      id += String.fromCharCode((value >>> bits) & 0xff);
      value &= (1 << bits) - 1;
    }
  }
  // Leftover bits must be zero: one label per id.
  return value === 0 && isPodId(id) ? id : null;
}
