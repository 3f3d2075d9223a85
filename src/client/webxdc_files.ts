/**
 * The webxdc calls that reach outside the app, as a pod can: `importFiles`
 * opens the browser's file picker, and `sendToChat` (a pod has no chat)
 * downloads the file it is given, or a text file of the text.
 *
 * @module
 */

/** The filter of `importFiles`. */
export interface FileFilter {
  /** File name extensions, with their dot (`.txt`). */
  extensions?: string[];
  /** Media types (`image/*`). */
  mimeTypes?: string[];
  /** Whether several files may be picked. */
  multiple?: boolean;
}

/** What `sendToChat` takes. */
export interface ChatMessage {
  /** A file, given as a Blob, base64 or text. */
  file?: {
    name: string;
    blob?: Blob;
    base64?: string;
    plainText?: string;
    type?: string;
  };
  /** A text (downloaded as a text file when there is no file). */
  text?: string;
}

/**
 * Opens the file picker.
 *
 * @param filter The extensions and media types offered, and `multiple`.
 * @returns The files picked (none when the picker is closed).
 */
export function importFiles(filter: FileFilter = {}): Promise<File[]> {
  const input = document.createElement("input");
  input.type = "file";
  input.accept = [...filter.extensions ?? [], ...filter.mimeTypes ?? []]
    .join(",");
  input.multiple = filter.multiple === true;
  return new Promise((resolve) => {
    input.addEventListener("change", () => resolve([...input.files ?? []]));
    input.addEventListener("cancel", () => resolve([]));
    input.click();
  });
}

/**
 * Downloads the message's file (or its text as a file): a pod has no chat
 * to send it to.
 *
 * @throws {TypeError} When the message has neither a file nor a text.
 */
export function sendToChat(message: ChatMessage): Promise<void> {
  const { file, text } = message ?? {};
  let blob: Blob;
  let name: string;
  if (file) {
    name = String(file.name || "file");
    if (file.blob instanceof Blob) blob = file.blob;
    else if (typeof file.base64 === "string") {
      const bytes = Uint8Array.from(atob(file.base64), (c) => c.charCodeAt(0));
      blob = new Blob([bytes], { type: file.type ?? "" });
    } else {blob = new Blob([String(file.plainText ?? "")], {
        type: "text/plain",
      });}
  } else if (typeof text === "string") {
    name = "message.txt";
    blob = new Blob([text], { type: "text/plain" });
  } else {
    return Promise.reject(
      new TypeError("Cannot send to chat: the message has no file and no text"),
    );
  }
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
  return Promise.resolve();
}
