/** Words for people: one way to count things in every message, table and summary. */

/** `1 firewall`, `2 firewalls`, `0 rules`: the count with the word in the number it needs. */
export const plural = (n: number, word: string, many = `${word}s`) => `${n} ${n === 1 ? word : many}`;
