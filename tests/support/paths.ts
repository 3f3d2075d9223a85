// Where the test helpers are: a journey or child script of tests/support/,
// as the path a child process is given.

/**
 * The path of a file of tests/support/.
 *
 * @param name The file's name, such as `chat_journey.ts`.
 * @returns Its absolute path.
 */
export function supportFile(name: string): string {
  return new URL(name, import.meta.url).pathname;
}
