// Approvals at the centre of the screen: a pending request of the open chat opens a modal
// dialog that cannot be missed (agent, tool, the command or arguments in full, the agent's own
// words, and deny / once / session / always, each a button
// reachable by Tab and by its letter). A badge counts the requests of every chat of the world
// and lists them. Requests and answers are events, so an answer given in another tab, or from
// the CLI, closes the dialog here too.

import { api } from "./api.js";
import { h, modal, timeEl, toast } from "./dom.js";
import { inline, renderMarkdown } from "./markdown.js";

const LONG_AT = 160;

const DECISIONS = [
  { key: "d", label: "Deny", decision: "deny", scope: "once", testid: "approval-deny", cls: "danger" },
  { key: "o", label: "Approve once", decision: "approve", scope: "once", testid: "approval-once", cls: "primary" },
  { key: "s", label: "For this session", decision: "approve", scope: "session", testid: "approval-session" },
  { key: "a", label: "Always", decision: "approve", scope: "always", testid: "approval-always" },
];

/** One argument as shown to the person deciding: whole, as it will run. Secret values come
 * masked by the server already ([REDACTED:NAME], with a note when one decides what runs), so
 * nothing is hidden here by its key's name (a `token_cmd` may be the command), and nothing is
 * folded: the tail of a long value may be what matters. Long or multi-line values get a box. */
export function argumentRow(key, value) {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  const shown = text.length > LONG_AT || text.includes("\n")
    ? h("pre", { class: "arg-long", testid: "arg-long" }, text)
    : h("span", {}, text);
  return h("li", {}, h("span", { class: "key" }, `${key}: `), shown);
}

export class ApprovalDesk {
  constructor({ world, badge, count, chatName, currentChat, infoFor, onJump, onAnswered }) {
    Object.assign(this, { world, badge, count, chatName, currentChat, infoFor, onJump, onAnswered });
    this.pending = new Map();
    this.gone = new Set(); // answered or being answered: never shown again
    this.later = new Set(); // put off with Esc / Later: stays in the badge, no auto-open
    this.dialog = null;
    this.showing = null;
    this.badgeClick = () => this.showList();
    badge.addEventListener("click", this.badgeClick);
  }

  destroy() {
    this.badge.removeEventListener("click", this.badgeClick);
    this.badge.hidden = true;
    this.closeDialog();
  }

  /** The pending list as read from the API (after the stream opened: events may have come). */
  load(list) {
    for (const item of list) this.add(item);
    this.refresh();
  }

  add(item) {
    if (this.gone.has(item.approvalId)) return;
    const known = this.pending.get(item.approvalId) ?? {};
    this.pending.set(item.approvalId, { ...known, ...item });
  }

  /** An `approval` event. */
  event(e) {
    if (e.phase === "requested") {
      this.add({
        approvalId: e.approvalId, agent: e.agent, chatId: e.chatId, toolName: e.toolName,
        toolArgs: e.detail?.toolArgs ?? {}, message: e.detail?.message ?? "", shell: e.detail?.shell,
        createdAt: e.createdAt,
      });
    } else if (e.phase === "answered") {
      this.done(e.approvalId);
    }
    this.refresh();
  }

  done(approvalId) {
    this.gone.add(approvalId);
    this.pending.delete(approvalId);
    if (this.showing === approvalId) this.closeDialog();
  }

  refresh() {
    const n = this.pending.size;
    this.count.textContent = String(n);
    this.badge.hidden = n === 0;
    this.badge.setAttribute("aria-label", `${n} approval${n === 1 ? "" : "s"} waiting`);
    if (!this.dialog) {
      const chat = this.currentChat();
      const next = [...this.pending.values()].find((a) => a.chatId === chat && !this.later.has(a.approvalId));
      if (next) this.open(next.approvalId);
    }
  }

  open(approvalId) {
    const item = this.pending.get(approvalId);
    if (!item) return;
    this.closeDialog();
    this.later.delete(approvalId);
    this.showing = approvalId;
    const info = this.infoFor(item.chatId, approvalId) ?? {};
    const shell = item.shell ?? info.shell;
    const args = item.toolArgs && Object.keys(item.toolArgs).length ? item.toolArgs : info.toolArguments ?? {};
    const position = [...this.pending.keys()].indexOf(approvalId) + 1;
    const buttons = DECISIONS.map((d) => h("button", {
      type: "button", class: d.cls, testid: d.testid, "aria-keyshortcuts": d.key,
      onClick: () => this.answer(item, d.decision, d.scope),
    }, d.label, h("kbd", { "aria-hidden": "true" }, d.key.toUpperCase())));
    const dialog = h("dialog", { class: "approval-dialog", testid: "approval-dialog", "aria-labelledby": "approval-title", dataset: { approvalId } },
      h("h2", { id: "approval-title" }, `${item.agent} asks to run ${item.toolName}`),
      this.pending.size > 1 ? h("p", { class: "muted" }, `Request ${position} of ${this.pending.size} waiting in this world`) : null,
      h("dl", { class: "approval-meta" },
        h("dt", {}, "Agent"), h("dd", { testid: "approval-agent" }, item.agent),
        h("dt", {}, "Tool"), h("dd", { testid: "approval-tool" }, item.toolName),
        h("dt", {}, "Chat"), h("dd", {}, this.chatName(item.chatId)),
        h("dt", {}, "Asked"), h("dd", {}, timeEl(item.createdAt) ?? "")),
      shell ? [
        h("div", { class: "command-line", testid: "approval-command" }, shell.commandLine ?? ""),
        shell.directory ? h("p", { class: "muted" }, `in ${shell.directory}`) : null,
        shell.understood === false ? h("p", { class: "error-text" }, `Not fully understood: ${shell.note || "it can only be asked about"}`) : null,
      ] : null,
      h("div", { class: "muted" }, "Arguments"),
      h("ul", { class: "args", testid: "approval-args" }, Object.entries(args).map(([k, v]) => argumentRow(k, v))),
      info.reason ? [h("div", { class: "muted" }, `${item.agent} said`), h("blockquote", { class: "md", testid: "approval-reason" }, renderMarkdown(info.reason))] : null,
      item.message ? inline(String(item.message), h("p", { testid: "approval-message" })) : null,
      h("div", { class: "decisions", role: "group", "aria-label": "Decision" }, buttons),
      h("div", { class: "actions" }, h("button", { type: "button", testid: "approval-later", onClick: () => this.putOff() }, "Later (Esc)")));
    dialog.addEventListener("cancel", (e) => { e.preventDefault(); this.putOff(); });
    dialog.addEventListener("keydown", (e) => {
      if (e.altKey || e.ctrlKey || e.metaKey || e.target.matches("input, textarea")) return;
      const d = DECISIONS.find((x) => x.key === e.key.toLowerCase());
      if (d) { e.preventDefault(); dialog.querySelector(`[data-testid=${d.testid}]`).click(); }
    });
    document.body.append(dialog);
    this.dialog = dialog;
    dialog.showModal();
    buttons[0].focus(); // Deny first: Enter on a dialog that popped up never runs anything
  }

  putOff() {
    if (this.showing) this.later.add(this.showing);
    this.closeDialog();
  }

  closeDialog() {
    if (!this.dialog) return;
    const dialog = this.dialog;
    this.dialog = null;
    this.showing = null;
    dialog.close();
    dialog.remove();
    queueMicrotask(() => this.refresh());
  }

  async answer(item, decision, scope) {
    const id = item.approvalId;
    this.done(id);
    this.refresh();
    try {
      await api.answer(this.world, id, decision, scope);
      this.onAnswered?.(id, { decision, scope });
    } catch (err) {
      if (err.status === 409 || err.status === 404) {
        toast(`That request was answered already (${err.message}).`);
        return;
      }
      toast(`The answer was not taken: ${err.message}`, { error: true });
      this.gone.delete(id);
      this.add(item);
      this.refresh();
    }
  }

  showList() {
    const items = [...this.pending.values()];
    modal((close) => [
      h("h2", {}, "Waiting for your approval"),
      items.length ? h("ul", { class: "approval-list", testid: "approvals-list" }, items.map((a) => h("li", {},
        h("strong", {}, a.agent), ` → ${a.toolName} `, h("span", { class: "muted" }, `in ${this.chatName(a.chatId)}`),
        h("span", { class: "spacer" }),
        h("button", {
          type: "button", class: "primary", testid: "approvals-list-open",
          onClick: () => { close(); this.onJump(a.chatId).then(() => this.open(a.approvalId)); },
        }, "Review")))) : h("p", { class: "muted" }, "Nothing is waiting."),
      h("div", { class: "actions" }, h("button", { type: "button", onClick: () => close() }, "Close")),
    ], { testid: "approvals-panel", label: "Pending approvals" });
  }
}
