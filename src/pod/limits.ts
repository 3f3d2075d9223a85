/**
 * How large a pod may be by default: the one number the bundler's warning,
 * `createPod` and the broker's `maxBlobBytes` option all start from.
 *
 * @module
 */

/** The default upload limit in bytes: 50 MiB. */
export const DEFAULT_MAX_BLOB_BYTES: number = 52_428_800;
