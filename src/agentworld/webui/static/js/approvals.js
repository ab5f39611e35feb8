// Approvals of the world: a pending request of the open chat shows as a card beside the
// composer (approval_card.js) without taking the focus from whatever the person is typing in;
// a live region announces it, and Alt+Shift+A (or a click, or Review) moves to it. A badge
// counts the requests of every chat of the world and lists them. Requests and answers are
// events, so an answer given in another tab, or from the CLI, closes the card here too. The
// badge counts the questions agents wait on too (`others()`), and lists them with a jump to
// their chat, where their cards are.

import { api } from "./api.js";
import { ApprovalCard } from "./approval_card.js";
import { h, modal, toast } from "./dom.js";

/** The shortcut that moves to the card: never a printable character (Alt+Shift+A). */
const isReviewKey = (e) => e.altKey && e.shiftKey && !e.ctrlKey && !e.metaKey && e.code === "KeyA";

export class ApprovalDesk {
  /** `host()` is the element the card goes in (beside the composer), or null off the chat. */
  constructor({ world, badge, count, announcer, host, chatName, currentChat, infoFor, onJump, onAnswered, others = () => [] }) {
    Object.assign(this, { world, badge, count, announcer, host, chatName, currentChat, infoFor, onJump, onAnswered, others });
    this.pending = new Map();
    this.gone = new Set(); // answered or being answered: never shown again
    this.later = new Set(); // put off with Esc / Later: stays in the badge, no auto-open
    this.card = null;
    this.showing = null;
    this.returnFocus = null; // where the person was before moving to the card
    this.badgeClick = () => this.showList();
    badge.addEventListener("click", this.badgeClick);
    this.reviewKey = (e) => {
      if (!isReviewKey(e)) return;
      e.preventDefault();
      if (!this.card) this.refresh();
      if (this.card) this.moveTo();
      else if (this.pending.size) this.showList();
    };
    document.addEventListener("keydown", this.reviewKey);
  }

  destroy() {
    this.badge.removeEventListener("click", this.badgeClick);
    document.removeEventListener("keydown", this.reviewKey);
    this.badge.hidden = true;
    this.closeDialog();
  }

  /** The card shown now, if it is still on the page (a chat page rebuilt drops it). */
  get dialog() {
    if (this.card && !this.card.el.isConnected) this.forget();
    return this.card?.el ?? null;
  }

  /** The pending list as read from the API (after the stream opened: events may have come). */
  load(list) {
    for (const item of list) this.add(item);
    this.refresh();
  }

  /** Read `chat`'s requests afresh (messages were removed from it): those the server no
   * longer has leave the page; one asked meanwhile stays. */
  async reread(chat) {
    const before = [...this.pending.values()].filter((a) => a.chatId === chat).map((a) => a.approvalId);
    let found;
    try {
      found = (await api.approvals(this.world, chat)).approvals;
    } catch (err) {
      if (err.status !== 404) toast(err.message, { error: true });
      return;
    }
    const still = new Set(found.map((a) => a.approvalId));
    for (const id of before) if (!still.has(id)) this.done(id);
    this.load(found);
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
        sandbox: e.detail?.sandbox, diff: e.detail?.diff ?? null, createdAt: e.createdAt,
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
    const approvals = this.pending.size;
    const questions = this.others().length;
    const n = approvals + questions;
    this.count.textContent = String(n);
    this.badge.hidden = n === 0;
    const label = this.badge.querySelector(".badge-label");
    if (label) label.textContent = !questions ? "Approvals" : approvals ? "Waiting" : "Questions";
    const said = [approvals ? `${approvals} approval${approvals === 1 ? "" : "s"}` : "", questions ? `${questions} question${questions === 1 ? "" : "s"}` : ""];
    this.badge.setAttribute("aria-label", `${said.filter(Boolean).join(" and ") || "nothing"} waiting`);
    const chat = this.currentChat();
    if (this.dialog && this.card.item.chatId !== chat) this.closeDialog();
    if (!this.dialog) {
      const next = [...this.pending.values()].find((a) => a.chatId === chat && !this.later.has(a.approvalId));
      if (next) this.open(next.approvalId);
    }
  }

  /** Show the card of `approvalId`; with `focus` (the person asked for it: Review) move there. */
  open(approvalId, { focus = false } = {}) {
    const item = this.pending.get(approvalId);
    const slot = this.host();
    if (!item || !slot) return;
    if (this.showing !== approvalId || !this.dialog) {
      this.closeDialog({ restore: false });
      this.later.delete(approvalId);
      this.showing = approvalId;
      this.card = new ApprovalCard(item, {
        info: this.infoFor(item.chatId, approvalId) ?? {},
        world: this.world,
        chatName: this.chatName(item.chatId),
        position: [...this.pending.keys()].indexOf(approvalId) + 1,
        total: this.pending.size,
        onAnswer: (decision, scope) => this.answer(item, decision, scope),
        onEdited: (args, scope) => this.approveEdited(item, args, scope),
        onLater: () => this.putOff(),
      });
      slot.append(this.card.el);
      this.announce(`Approval needed: ${item.agent} asks to run ${item.toolName}. Press Alt+Shift+A to review it.`);
    }
    if (focus) this.moveTo();
  }

  /** The person moves to the card; the focus goes back where it was once the card closes. */
  moveTo() {
    if (!this.card) return;
    const active = document.activeElement;
    if (active && !this.card.el.contains(active) && active !== document.body) this.returnFocus = active;
    this.card.focus();
  }

  announce(text) {
    if (!this.announcer) return;
    this.announcer.textContent = "";
    setTimeout(() => { this.announcer.textContent = text; }, 50);
  }

  putOff() {
    if (this.showing) this.later.add(this.showing);
    this.closeDialog();
  }

  forget() {
    this.card?.destroy();
    this.card = null;
    this.showing = null;
  }

  closeDialog({ restore = true } = {}) {
    if (!this.card) return;
    const hadFocus = this.card.el.contains(document.activeElement);
    this.forget();
    if (restore && hadFocus && this.returnFocus?.isConnected) this.returnFocus.focus();
    if (restore) this.returnFocus = null;
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

  /** Approve the call as the person edited it. Unlike a plain answer the card stays until the
   * server takes it: a refused edit (403 by the policy, 422 invalid) is shown in the card, and
   * the request stays pending for another edit, an approval as asked, or a denial. */
  async approveEdited(item, args, scope) {
    const id = item.approvalId;
    try {
      await api.answer(this.world, id, "approve", scope, args);
    } catch (err) {
      if (err.status === 409 || err.status === 404) {
        toast(`That request was answered already (${err.message}).`);
        this.done(id);
        this.refresh();
        return;
      }
      throw err;
    }
    this.done(id);
    this.refresh();
    this.onAnswered?.(id, { decision: "approve", scope, edited: true });
  }

  showList() {
    const items = [...this.pending.values()];
    const questions = this.others();
    modal((close) => [
      h("h2", {}, "Waiting for your approval"),
      items.length ? h("ul", { class: "approval-list", testid: "approvals-list" }, items.map((a) => h("li", {},
        h("strong", {}, a.agent), ` → ${a.toolName} `, h("span", { class: "muted" }, `in ${this.chatName(a.chatId)}`),
        h("span", { class: "spacer" }),
        h("button", {
          type: "button", class: "primary", testid: "approvals-list-open",
          onClick: () => { close(); this.onJump(a.chatId).then(() => this.open(a.approvalId, { focus: true })); },
        }, "Review")))) : h("p", { class: "muted" }, questions.length ? "No approval is waiting." : "Nothing is waiting."),
      questions.length ? [h("h2", {}, "Questions for you"), h("ul", { class: "approval-list", testid: "questions-list" }, questions.map((q) => h("li", {},
        h("strong", {}, q.agent), ` asks: ${q.question} `, h("span", { class: "muted" }, `in ${this.chatName(q.chatId)}`),
        h("span", { class: "spacer" }),
        h("button", {
          type: "button", class: "primary", testid: "questions-list-open",
          onClick: () => { close(); this.onJump(q.chatId); },
        }, "Open"))))] : null,
      h("div", { class: "actions" }, h("button", { type: "button", onClick: () => close() }, "Close")),
    ], { testid: "approvals-panel", label: "Pending approvals" });
  }
}
