/**
 * The operator's commands: `list` the stored pods and `delete` (take down)
 * one. Both work on the data directory of a running broker: the registry
 * keeps a tombstone, and the broker answers 410 for it within a second.
 *
 * @module
 */

import { isPodId } from "../_util/id.ts";
import type { Registry } from "../registries/types.ts";
import { onePositional, parse, print, stderr } from "./io.ts";
import { openRegistry } from "./registry.ts";
import { UsageError } from "./usage_error.ts";

const REGISTRY_FLAGS = {
  registry: { type: "string" },
  "data-dir": { type: "string" },
  "database-url": { type: "string" },
} as const;

/** `list --data-dir D [--owner KEY]`: one JSON record a line, oldest first. */
export async function listCommand(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    ...REGISTRY_FLAGS,
    owner: { type: "string" },
  }, true);
  if (positionals.length > 0) throw new UsageError("list takes no file");
  const registry = await openOperatorRegistry("list", values);
  try {
    if (registry.listPods === undefined) {
      throw new UsageError("Cannot list: this registry cannot list its pods");
    }
    const filter = values.owner === undefined ? {} : { owner: values.owner };
    for await (const record of registry.listPods(filter)) {
      print(`${JSON.stringify(record)}\n`);
    }
    return 0;
  } finally {
    await registry.close?.();
  }
}

/**
 * `delete ID --data-dir D`: exit 0 deleted, 1 unknown or already deleted
 * id, 2 usage.
 */
export async function deleteCommand(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, REGISTRY_FLAGS, true);
  const id = onePositional(positionals, "delete", "pod id");
  if (!isPodId(id)) {
    throw new UsageError(
      `Cannot delete '${id}': a pod id is 12 characters of [A-Za-z0-9]`,
    );
  }
  const registry = await openOperatorRegistry("delete", values);
  try {
    if (registry.deletePod === undefined) {
      throw new UsageError("Cannot delete: this registry cannot delete pods");
    }
    if (!(await registry.deletePod(id))) {
      const gone = await registry.isDeleted?.(id);
      stderr(
        `pod-broker: Cannot delete '${id}': ${
          gone ? "already deleted (its URL answers 410)" : "no such pod"
        }\n`,
      );
      return 1;
    }
    print(`deleted ${id}\n`);
    return 0;
  } finally {
    await registry.close?.();
  }
}

/**
 * The registry a running broker keeps its pods in: `--data-dir` alone is
 * SQLite, `--database-url` alone PostgreSQL; with neither, say which flags
 * the command needs.
 */
async function openOperatorRegistry(
  command: "list" | "delete",
  values: { registry?: string; "data-dir"?: string; "database-url"?: string },
): Promise<Registry> {
  if (
    values.registry === undefined && values["data-dir"] === undefined &&
    values["database-url"] === undefined
  ) {
    throw new UsageError(
      `${command} needs the broker's registry: --data-dir DIR (SQLite) or --registry postgres --database-url URL`,
    );
  }
  const kind = values.registry ??
    (values["database-url"] === undefined ? "sqlite" : "postgres");
  if (kind === "memory") {
    throw new UsageError(
      "Cannot use --registry memory here: it lives inside one broker process",
    );
  }
  return await openRegistry(kind, values["data-dir"], {
    databaseUrl: values["database-url"],
    besideBroker: true,
  });
}
