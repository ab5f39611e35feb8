// Who a message will reach, by the rules the runtime applies (SPEC R1-R2; the Python original
// is agentworld/routing/mentions.py): only a mention block at the start of a line addresses
// agents; a human message with no mention at all goes to every agent (or the main agent); one
// that only mentions someone mid-text reaches nobody.

const NAME = "[A-Za-z0-9_-]+";
const END = "(?![\\p{L}\\p{N}_@-]|\\.[\\p{L}\\p{N}_])";
const BLOCK = new RegExp(`^@${NAME}${END}(?:[\\s,]+@${NAME}${END})*`, "u");
const TOKEN = new RegExp(`@(${NAME})`, "gu");
const ANY = new RegExp(`(?<![\\p{L}\\p{N}_.@-])@${NAME}${END}`, "u");

/** Lower-cased names mentioned at a paragraph start, first seen first, no duplicates. */
export function paragraphMentions(text) {
  const names = [];
  for (const line of String(text).split(/\r\n|\r|\n/)) {
    const block = BLOCK.exec(line.trimStart());
    if (!block) continue;
    for (const token of block[0].matchAll(TOKEN)) {
      const name = token[1].toLowerCase();
      if (!names.includes(name)) names.push(name);
    }
  }
  return names;
}

/** {agents: [names that will answer], unknown: [mentioned names that are no agent], reason}. */
export function recipients(text, agentNames, mainAgent) {
  const byKey = new Map(agentNames.map((n) => [n.toLowerCase(), n]));
  const mentioned = paragraphMentions(text);
  if (mentioned.length) {
    return {
      agents: mentioned.filter((n) => byKey.has(n)).map((n) => byKey.get(n)),
      unknown: mentioned.filter((n) => !byKey.has(n)),
      reason: "mentioned",
    };
  }
  if (ANY.test(text)) return { agents: [], unknown: [], reason: "mid-text" };
  if (mainAgent && byKey.has(mainAgent.toLowerCase())) {
    return { agents: [byKey.get(mainAgent.toLowerCase())], unknown: [], reason: "main" };
  }
  return { agents: [...agentNames], unknown: [], reason: "everyone" };
}

/** The `@partial` being typed at the caret: {start, query}, or null. */
export function mentionAt(text, caret) {
  const m = /(^|[\s,])@([A-Za-z0-9_-]*)$/.exec(text.slice(0, caret));
  if (!m) return null;
  return { start: caret - m[2].length - 1, query: m[2] };
}
