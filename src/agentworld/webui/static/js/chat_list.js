// The chat list of a world: newest first, each branch (a chat made from a message of another,
// its document's `branchOf`) indented under the chat it came from and naming it. A search shows
// the chats whose name matches, each still naming its source. And the open chat's head: its
// name, where it was branched from, its actions.

import { api } from "./api.js";
import { formatCost, h, modal, replace, timeEl } from "./dom.js";

/** The chats in the order shown, each with how deep it sits: sources before their branches. */
export function chatTree(chats) {
  const ids = new Set(chats.map((c) => c.chatId));
  const sourceOf = (c) => (c.branchOf && ids.has(c.branchOf.chatId) && c.branchOf.chatId !== c.chatId ? c.branchOf.chatId : null);
  const branches = new Map();
  for (const c of chats) {
    const source = sourceOf(c);
    if (source) branches.set(source, [...(branches.get(source) ?? []), c]);
  }
  const out = [];
  const seen = new Set();
  const visit = (c, depth) => {
    if (seen.has(c.chatId)) return; // a loop in broken data is shown once
    seen.add(c.chatId);
    out.push({ chat: c, depth });
    for (const b of (branches.get(c.chatId) ?? []).slice().reverse()) visit(b, depth + 1);
  };
  for (const c of chats.slice().reverse()) if (!sourceOf(c)) visit(c, 0);
  for (const c of chats.slice().reverse()) visit(c, 0);
  return out;
}

/** Fill `list` with the chats of `world`; `current` is marked, `query` filters by name. */
export function renderChatList(list, { world, chats, current, query }) {
  const names = new Map(chats.map((c) => [c.chatId, c.name]));
  const rows = query
    ? chats.slice().reverse().filter((c) => c.name.toLowerCase().includes(query)).map((chat) => ({ chat, depth: 0 }))
    : chatTree(chats);
  replace(list, rows.map(({ chat: c, depth }) => {
    const source = c.branchOf ? names.get(c.branchOf.chatId) ?? "a deleted chat" : null;
    const item = h("li", {
      testid: "chat-item", class: depth ? "branch" : null,
      dataset: c.branchOf ? { chatId: c.chatId, depth: String(depth), branchOf: c.branchOf.chatId } : { chatId: c.chatId, depth: "0" },
    },
    h("a", {
      href: `#/w/${encodeURIComponent(world)}/c/${encodeURIComponent(c.chatId)}`,
      "aria-current": c.chatId === current ? "page" : null,
      title: source ? `${c.name}, a branch of ${source}` : c.name,
    }, c.name,
    source ? h("div", { class: "meta branch-of", testid: "chat-branch-of" }, `↳ branch of ${source}`) : null,
    h("div", { class: "meta" }, `${c.messageCount} messages · `,
      c.usage?.costUsd ? h("span", { class: "cost", testid: "chat-cost" }, `${formatCost(c.usage)} · `) : null,
      c.usage?.costUsd === null ? h("span", { class: "cost", testid: "chat-cost" }, "cost ? · ") : null,
      timeEl(c.updatedAt ?? c.createdAt))));
    if (depth) item.style.setProperty("--depth", String(Math.min(depth, 4)));
    return item;
  }));
  if (!rows.length) list.append(h("li", { class: "muted" }, query ? "No chat matches." : "No chats yet."));
}

/** The head of the open chat `chat` (undefined: none yet). */
export function renderChatHead(head, { world, chats, chat, filterAgent, onRename, onDelete, onClearFilter }) {
  const actions = chat ? [
    h("button", { type: "button", testid: "chat-rename", onClick: () => onRename(chat) }, "Rename"),
    h("a", { class: "btn", testid: "chat-export", href: api.exportUrl(world, chat.chatId), download: `${chat.name.replace(/[^\w.-]+/g, "_")}.md` }, "Export"),
    h("button", { type: "button", class: "danger", testid: "chat-delete", onClick: () => onDelete(chat) }, "Delete"),
  ] : [];
  const filter = filterAgent
    ? h("button", { type: "button", class: "filter-chip", testid: "filter-clear", onClick: () => onClearFilter() }, `Only ${filterAgent} ✕`)
    : null;
  const sourceId = chat?.branchOf?.chatId;
  const source = sourceId ? chats.find((c) => c.chatId === sourceId) : null;
  const from = sourceId ? h("span", { class: "muted branch-source", testid: "chat-branch-source" }, "branch of ",
    source ? h("a", { href: `#/w/${encodeURIComponent(world)}/c/${encodeURIComponent(sourceId)}` }, source.name) : "a deleted chat") : null;
  replace(head, h("h2", { testid: "chat-title" }, chat ? chat.name : "No chat yet"), from, filter, actions);
}

/** Ask for a chat's new name (null: cancelled). */
export function askChatName(chat) {
  return modal((close) => {
    const input = h("input", { testid: "rename-input", value: chat.name, "aria-label": "Chat name", autofocus: true });
    return h("form", { onSubmit: (e) => { e.preventDefault(); close(input.value.trim()); } },
      h("h2", {}, "Rename chat"), input,
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", testid: "rename-save" }, "Rename"),
        h("button", { type: "button", onClick: () => close(null) }, "Cancel")));
  }, { testid: "rename-dialog", label: "Rename chat" });
}
