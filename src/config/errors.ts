/**
 * The errors of option resolution: {@linkcode OptionError} for a value
 * given in code, {@linkcode OptionTextError} for a flag's text.
 *
 * @module
 */

/**
 * A bad option: a `TypeError` that names the option, so the CLI can name
 * its flag. Any other `TypeError` from the broker is a bug.
 */
export class OptionError extends TypeError {
  /** The option's key path. */
  readonly key: string;
  /** What is wrong with it, without the option's name. */
  readonly reason: string;
  /** The other option the reason ends by naming, if any. */
  readonly other: string | undefined;
  #stem: string;

  /**
   * Creates the error for one option.
   *
   * @param key The option's key path.
   * @param reason What is wrong, such as "must be a boolean".
   * @param other The key path of another option the reason ends by naming
   * ("is required with" `turn.urls`), so that the CLI can name its flag.
   */
  constructor(key: string, reason: string, other?: string) {
    const full = other === undefined ? reason : `${reason} ${other}`;
    super(`Cannot start the broker: option '${key}' ${full}`);
    this.name = "OptionError";
    this.key = key;
    this.reason = full;
    this.other = other;
    this.#stem = reason;
  }

  /**
   * The reason, with the other option (if any) named by `name`.
   *
   * @param name How to name an option by its key path (the CLI: its flag).
   * @returns The reason.
   */
  reasonNaming(name: (key: string) => string): string {
    return this.other === undefined
      ? this.#stem
      : `${this.#stem} ${name(this.other)}`;
  }
}

/**
 * A flag's text that cannot be an option's value (a kind's `fromText`
 * refused it). The CLI words it as `Cannot <verb> --flag '<text>': <reason>`.
 */
export class OptionTextError extends Error {
  /** The flag, without dashes. */
  readonly flag: string;
  /** The text given (for a repeated flag, the one occurrence at fault). */
  readonly text: string;
  /** What is wrong with it. */
  readonly reason: string;
  /** What could not be done: "use" the text, or "read" the file it names. */
  readonly verb: "use" | "read";

  /**
   * Creates the error for one flag's text.
   *
   * @param flag The flag, without dashes.
   * @param text The text given.
   * @param reason What is wrong.
   * @param verb "use", or "read" for a file that cannot be read.
   */
  constructor(
    flag: string,
    text: string,
    reason: string,
    verb: "use" | "read" = "use",
  ) {
    super(`Cannot ${verb} --${flag} '${text}': ${reason}`);
    this.name = "OptionTextError";
    this.flag = flag;
    this.text = text;
    this.reason = reason;
    this.verb = verb;
  }
}
