/**
 * The room's receive budget: what all of a room's links hold together of
 * messages still arriving (chunks of a message not yet whole, and what came
 * before a channel could be used). `maxMessageBytes` bounds one link; this
 * bounds the tab, whatever the number of peers.
 *
 * Past the budget, the link holding the most is closed, not the one whose
 * chunk came last: peers that fill the budget and never finish a message
 * could otherwise have every honest peer's next large message close that
 * honest peer's link.
 *
 * @module
 */

/** What the budget needs of a link. */
export interface Holder {
  /** The bytes it holds of messages still arriving. */
  readonly held: number;
  /** Closes it for good; it lets go of what it held. */
  close(): void;
}

/**
 * Closes the links holding the most, one at a time, until `links` hold at
 * most `max` bytes together. A closed link leaves `links`.
 *
 * @param links The room's links.
 * @param max The budget, in bytes.
 */
export function spend(links: Set<Holder>, max: number): void {
  for (;;) {
    let total = 0;
    let most: Holder | undefined;
    for (const link of links) {
      total += link.held;
      if (!most || link.held > most.held) most = link;
    }
    if (total <= max || !most) return;
    links.delete(most);
    most.close();
  }
}
