// A unified diff as the person approving a file change reads it: one line per line of the
// diff, added lines green, removed lines red, file and hunk headers set apart. Each line goes
// in as text, so a diff line that looks like markup shows as those characters. A long diff
// scrolls inside its own box, never pushing the buttons below it off the screen.

import { h } from "./dom.js";

/** The kind of one diff line: file header, hunk header, added, removed, note or context. */
export function lineKind(line) {
  if (line.startsWith("+++ ") || line.startsWith("--- ") || line === "+++" || line === "---") return "file";
  if (line.startsWith("@@")) return "hunk";
  if (line.startsWith("+")) return "add";
  if (line.startsWith("-")) return "del";
  if (line.startsWith("\\")) return "note";
  return "context";
}

/** How many lines the diff adds and removes (its header lines not counted). */
export function diffStats(text) {
  let added = 0;
  let removed = 0;
  for (const line of String(text).split("\n")) {
    const kind = lineKind(line);
    if (kind === "add") added += 1;
    else if (kind === "del") removed += 1;
  }
  return { added, removed };
}

/** The diff block, or null for a call that has no diff. */
export function diffView(text) {
  if (typeof text !== "string" || text === "") return null;
  const lines = text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n");
  const { added, removed } = diffStats(text);
  const body = h("div", {
    class: "diff", testid: "approval-diff", role: "region", tabindex: "0",
    "aria-label": `The change: ${added} line${added === 1 ? "" : "s"} added, ${removed} removed`,
  }, lines.map((line) => {
    const kind = lineKind(line);
    return h("div", { class: `diff-line diff-${kind}`, testid: "diff-line", dataset: { kind } }, line === "" ? " " : line);
  }));
  return h("div", { class: "diff-wrap" },
    h("div", { class: "muted diff-caption", testid: "approval-diff-stats" }, `The change: +${added} −${removed} lines`),
    body);
}
