/**
 * The error for bad command-line input: the CLI prints its message on one
 * line and exits 2.
 *
 * @module
 */

/** Bad command-line input; `runCli` prints it and exits 2. */
export class UsageError extends Error {
  /**
   * @param message What is wrong, as "Cannot <action>: <state>".
   */
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}
