/**
 * The option kinds: for each, how a value given in code is checked
 * (`check`) and how a flag's text becomes a value (`fromText`). A row of the
 * options table names its kind; the resolver, the CLI and the value types
 * all read this one record.
 *
 * @module
 */

import { nodeBuiltin } from "../_util/host.ts";
import { type IceServer, isIceUrl, isTurnUrl } from "../signaling/ice.ts";
import type { Logger } from "../_util/log.ts";
import { type Bus, isBus } from "../signaling/bus/mod.ts";
import { assertSafeSandbox } from "../serving/pod_headers.ts";
import {
  canonicalPermissions,
  isPodPermission,
  POD_PERMISSIONS,
  type PodPermission,
} from "../serving/permissions.ts";
import { DenyList, DenyListError } from "../operator/deny_list.ts";
import { podDomainOf } from "../_util/pod_label.ts";
import type { Registry } from "../registries/types.ts";

/** What a kind reads of its row. */
export interface KindRow {
  /** Smallest allowed integer. */
  readonly min?: number;
  /** Largest allowed integer. */
  readonly max?: number;
  /** The allowed values of a `choice`. */
  readonly choices?: readonly string[];
}

/** Refuses a value: throws with the reason, such as "must be a boolean". */
export type Refuse = (reason: string) => never;

/**
 * Refuses a flag's text: throws with the reason; `verb` says what could not
 * be done with it ("use", or "read" for a file that cannot be read).
 */
export type RefuseText = (reason: string, verb?: "use" | "read") => never;

/** One option kind. */
export interface Kind<T> {
  /** How the command line reads the flag: a switch, or a value. */
  readonly flagType: "boolean" | "string";
  /**
   * Checks a value given in code.
   *
   * @returns The value to keep (a copy of an array, a normalised URL).
   */
  check(value: unknown, row: KindRow, refuse: Refuse): T;
  /**
   * Turns one flag's text into the value `check` then sees (for a repeated
   * flag, each occurrence); null for a kind that has no text form.
   */
  readonly fromText:
    | ((text: string, row: KindRow, refuse: RefuseText) => unknown)
    | null;
}

const asIs = (text: string): string => text;

const bounds = (row: KindRow) =>
  `from ${row.min ?? 0} to ${row.max ?? Number.MAX_SAFE_INTEGER}`;

function nonEmptyString(value: unknown, refuse: Refuse): string {
  if (typeof value !== "string" || value === "") {
    refuse("must be a non-empty string");
  }
  return value as string;
}

function stringList(
  value: unknown,
  ok: (item: string) => boolean,
  refuse: () => never,
): string[] {
  if (
    !Array.isArray(value) ||
    value.some((item) => typeof item !== "string" || !ok(item))
  ) {
    refuse();
  }
  return [...(value as string[])];
}

/** Every option kind, by name, with the type of its checked value. */
export interface Kinds {
  /** A safe integer within the row's `min` and `max`. */
  readonly integer: Kind<number>;
  /** A non-empty string. */
  readonly string: Kind<string>;
  /** Sandbox tokens, without `allow-same-origin`. */
  readonly sandbox: Kind<string>;
  /** A switch. */
  readonly boolean: Kind<boolean>;
  /** An http(s) URL without query or fragment (a trailing slash dropped). */
  readonly url: Kind<string>;
  /** A DNS name, lower-cased, without a trailing dot. */
  readonly domain: Kind<string>;
  /** Origins (the literal "null" included). */
  readonly origins: Kind<string[]>;
  /** RTCIceServer entries; the flag adds a STUN URL. */
  readonly iceServers: Kind<IceServer[]>;
  /** At least one `turn:` or `turns:` URL. */
  readonly turnUrls: Kind<string[]>;
  /** A secret; the flag names a file that holds it. */
  readonly secret: Kind<string>;
  /** A registry object (code only). */
  readonly registry: Kind<Registry>;
  /** A signaling bus (code only). */
  readonly bus: Kind<Bus>;
  /** A log function (code only). */
  readonly logger: Kind<Logger>;
  /** One of the row's `choices`. */
  readonly choice: Kind<string>;
  /** Some of the row's `choices`, each once; the flag: comma-separated, or `none`. */
  readonly choiceList: Kind<string[]>;
  /** A deny list; the flag names its file. */
  readonly denyList: Kind<DenyList>;
  /** Pod permission tokens; the flag is a comma-separated list, or `none`. */
  readonly permissions: Kind<PodPermission[]>;
}

/** Every option kind, by name. */
export const KINDS: Kinds = {
  integer: {
    flagType: "string",
    check(value, row, refuse) {
      const min = row.min ?? 0;
      const max = row.max ?? Number.MAX_SAFE_INTEGER;
      if (
        typeof value !== "number" || !Number.isSafeInteger(value) ||
        value < min || value > max
      ) {
        refuse(`must be an integer ${bounds(row)}`);
      }
      return value as number;
    },
    fromText(text, row, refuse) {
      if (!/^\d{1,16}$/.test(text)) {
        refuse(`expected an integer ${bounds(row)}`);
      }
      return Number(text);
    },
  },
  string: {
    flagType: "string",
    check: (value, _row, refuse) => nonEmptyString(value, refuse),
    fromText: asIs,
  },
  sandbox: {
    flagType: "string",
    check(value, _row, refuse) {
      const tokens = nonEmptyString(value, refuse);
      try {
        assertSafeSandbox(tokens);
      } catch {
        refuse(
          "must not allow-same-origin: it would give every pod the broker's origin",
        );
      }
      return tokens;
    },
    fromText: asIs,
  },
  boolean: {
    flagType: "boolean",
    check(value, _row, refuse) {
      if (typeof value !== "boolean") refuse("must be a boolean");
      return value as boolean;
    },
    fromText: (text) => text === "true",
  },
  url: {
    flagType: "string",
    check: (value, _row, refuse) =>
      httpUrl(value) ??
        refuse("must be an http(s) URL without query or fragment"),
    fromText: asIs,
  },
  domain: {
    flagType: "string",
    check: (value, _row, refuse) =>
      podDomainOf(value) ??
        refuse("must be a DNS name such as pods.example.com or localhost"),
    fromText: asIs,
  },
  origins: {
    flagType: "string",
    check: (value, _row, refuse) =>
      stringList(
        value,
        (origin) => origin !== "",
        () => refuse("must be an array of origins"),
      ),
    fromText: asIs,
  },
  iceServers: {
    flagType: "string",
    check: (value, _row, refuse) =>
      iceServerList(value) ??
        refuse(
          "must be an array of {urls, username?, credential?} with stun:, turn: or turns: URLs (TURN with credentials)",
        ),
    // The flag adds a STUN server; TURN with fixed credentials is code only.
    fromText(text, _row, refuse) {
      if (!text.startsWith("stun:") || !isIceUrl(text)) {
        refuse("expected a stun: URL");
      }
      return { urls: text };
    },
  },
  turnUrls: {
    flagType: "string",
    check(value, _row, refuse) {
      const urls = stringList(
        value,
        isTurnUrl,
        () => refuse("must be an array of turn: or turns: URLs"),
      );
      if (urls.length === 0) refuse("must list at least one TURN URL");
      return urls;
    },
    fromText: asIs,
  },
  secret: {
    flagType: "string",
    check: (value, _row, refuse) => nonEmptyString(value, refuse),
    // The text is a file's path: a secret never appears in the process list.
    fromText(path, _row, refuse) {
      let text = "";
      try {
        text = nodeBuiltin("node:fs").readFileSync(path, "utf8");
      } catch (error) {
        refuse((error as { code?: string }).code ?? "unreadable", "read");
      }
      const secret = text.trim();
      if (secret === "") refuse("the file is empty");
      return secret;
    },
  },
  registry: {
    flagType: "string",
    check(value, _row, refuse) {
      const registry = value as Partial<Registry> | null;
      for (
        const method of ["putPod", "getRecord", "getBlob", "bumpHits"] as const
      ) {
        if (typeof registry?.[method] !== "function") {
          refuse(`must be a Registry with ${method}()`);
        }
      }
      return value as Registry;
    },
    fromText: null,
  },
  bus: {
    flagType: "string",
    check(value, _row, refuse) {
      if (!isBus(value)) {
        refuse(
          "must be a signaling Bus (attach, join, leave, snapshot, deliver, close)",
        );
      }
      return value as Bus;
    },
    fromText: null,
  },
  logger: {
    flagType: "string",
    check(value, _row, refuse) {
      if (typeof value !== "function") refuse("must be a function");
      return value as Logger;
    },
    fromText: null,
  },
  choice: {
    flagType: "string",
    check(value, row, refuse) {
      const choices = row.choices ?? [];
      if (typeof value !== "string" || !choices.includes(value)) {
        refuse(`must be one of ${choices.map((c) => `'${c}'`).join(", ")}`);
      }
      return value as string;
    },
    fromText: asIs,
  },
  choiceList: {
    flagType: "string",
    check(value, row, refuse) {
      const choices = row.choices ?? [];
      const list = stringList(
        value,
        (item) => choices.includes(item),
        () =>
          refuse(
            `must be an array of ${
              choices.map((c) => `'${c}'`).join(", ")
            } (or empty)`,
          ),
      );
      if (new Set(list).size !== list.length) refuse("must name each once");
      return list;
    },
    fromText(text, row, refuse) {
      if (text === "none") return [];
      const choices = row.choices ?? [];
      const list = text.split(",").map((item) => item.trim());
      if (list.some((item) => !choices.includes(item))) {
        refuse(`expected ${choices.join(", ")} (comma-separated) or none`);
      }
      return [...new Set(list)];
    },
  },
  denyList: {
    flagType: "string",
    check(value, _row, refuse) {
      if (!(value instanceof DenyList)) {
        refuse(
          "must be a DenyList (DenyList.load(path) or new DenyList({ keys, contents }))",
        );
      }
      return value as DenyList;
    },
    // The text is the file's path; the list is read now, so a bad file
    // stops the start, and again on SIGHUP.
    async fromText(path, _row, refuse) {
      try {
        return await DenyList.load(path);
      } catch (error) {
        if (!(error instanceof DenyListError)) throw error;
        const prefix = `Cannot read the deny list '${path}': `;
        const reason = error.message.startsWith(prefix)
          ? error.message.slice(prefix.length)
          : error.message;
        return refuse(reason, error.line === null ? "read" : "use");
      }
    },
  },
  permissions: {
    flagType: "string",
    check: (value, _row, refuse) =>
      canonicalPermissions(
        stringList(
          value,
          isPodPermission,
          () => refuse(`must be an array of ${PERMISSION_LIST}`),
        ),
      ),
    fromText(text, _row, refuse) {
      if (text === "none") return [];
      const tokens = text.split(",").map((token) => token.trim());
      const unknown = tokens.find((token) => !isPodPermission(token));
      if (unknown !== undefined) {
        refuse(
          `'${unknown}' is not one of ${PERMISSION_LIST}; give a comma-separated list of them, or none`,
        );
      }
      return tokens;
    },
  },
};

const PERMISSION_LIST = POD_PERMISSIONS.join(", ");

/** How an option's value is checked, and how its flag's text is read. */
export type OptionKind = keyof Kinds;

/** The type of a checked value of kind `K`. */
export type KindValue<K extends OptionKind> = Kinds[K] extends Kind<infer T> ? T
  : never;

function httpUrl(value: unknown): string | null {
  if (typeof value !== "string") return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (
    (url.protocol !== "http:" && url.protocol !== "https:") || url.search ||
    url.hash
  ) {
    return null;
  }
  return url.href.replace(/\/+$/, "");
}

function iceServerList(value: unknown): IceServer[] | null {
  if (!Array.isArray(value)) return null;
  const servers: IceServer[] = [];
  for (const entry of value as unknown[]) {
    if (typeof entry !== "object" || entry === null) return null;
    const { urls, username, credential, ...rest } = entry as Record<
      string,
      unknown
    >;
    if (Object.keys(rest).length > 0) return null;
    const list = typeof urls === "string" ? [urls] : urls;
    if (
      !Array.isArray(list) || list.length === 0 ||
      list.some((url) => typeof url !== "string" || !isIceUrl(url))
    ) {
      return null;
    }
    const hasTurn = list.some((url) => isTurnUrl(url as string));
    if (username !== undefined && typeof username !== "string") return null;
    if (credential !== undefined && typeof credential !== "string") return null;
    if (hasTurn && (username === undefined || credential === undefined)) {
      return null;
    }
    const server: IceServer = {
      urls: typeof urls === "string" ? urls : [...list as string[]],
    };
    if (username !== undefined) server.username = username as string;
    if (credential !== undefined) server.credential = credential as string;
    servers.push(server);
  }
  return servers;
}
