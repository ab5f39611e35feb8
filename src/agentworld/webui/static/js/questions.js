// Questions agents ask a person (ask_user, SPEC §7.2 F3): a card for each question waiting in
// the open chat, beside the composer, with one button per option and a free-text field when
// the agent allows one. Like an approval card (SPEC §7.1 C4) it never takes the focus, its
// buttons wait a moment after it appears, and no key typed elsewhere answers it; Enter in its
// own text field sends what was typed there. A question answered anywhere (another tab, the
// CLI, a timeout) leaves the page when its event comes.

import { api } from "./api.js";
import { ARM_MS } from "./approval_card.js";
import { h, timeEl, toast } from "./dom.js";

export class QuestionCard {
  /** `onAnswer(text)` sends an answer: a promise, rejected with the server's refusal. */
  constructor(item, { onAnswer }) {
    this.item = item;
    this.onAnswer = onAnswer;
    this.armed = false;
    this.sending = false;
    const options = Array.isArray(item.options) ? item.options.map(String) : [];
    this.buttons = options.map((option) => h("button", {
      type: "button", class: "option", testid: "question-option", disabled: true, dataset: { option },
      onClick: () => this.send(option),
    }, option));
    this.error = h("p", { class: "error-text", testid: "question-error", role: "alert", hidden: true });
    let free = null;
    if (item.allowFreeText !== false) {
      const id = `answer-${item.questionId}`;
      this.field = h("textarea", {
        id, rows: 2, testid: "question-text", class: "question-text",
        placeholder: "Your answer (Enter sends, Shift+Enter for a new line)",
        onKeydown: (e) => this.key(e),
      });
      this.submit = h("button", { type: "button", class: "primary", testid: "question-send", disabled: true, onClick: () => this.sendText() }, "Answer");
      free = [h("label", { for: id }, options.length ? "Or answer in your own words" : "Your answer"),
        h("div", { class: "row question-free" }, this.field, this.submit)];
    }
    this.el = h("section", {
      class: "question-card", testid: "question-card", role: "region", "aria-label": `Question from ${item.agent}`,
      dataset: { questionId: item.questionId, armed: "false" },
    },
    h("div", { class: "arm-bar", "aria-hidden": "true" }),
    h("h2", {}, `${item.agent} asks`, h("span", { class: "muted question-time" }, " ", timeEl(item.createdAt))),
    h("p", { class: "question", testid: "question-text-shown" }, String(item.question ?? "")),
    options.length ? h("div", { class: "options", role: "group", "aria-label": "Options" }, this.buttons) : null,
    free, this.error);
    this.timer = setTimeout(() => this.arm(), ARM_MS);
  }

  arm() {
    this.armed = true;
    this.el.dataset.armed = "true";
    this.enable(true);
  }

  enable(on) {
    for (const b of this.buttons) b.disabled = !on;
    if (this.submit) this.submit.disabled = !on;
  }

  key(e) {
    if (e.key !== "Enter" || e.shiftKey || e.altKey || e.ctrlKey || e.metaKey || e.isComposing) return;
    e.preventDefault();
    this.sendText();
  }

  sendText() {
    const text = this.field?.value ?? "";
    if (!text.trim()) {
      this.showError("Type an answer first.");
      return;
    }
    this.send(text);
  }

  async send(text) {
    if (!this.armed || this.sending) return;
    this.sending = true;
    this.error.hidden = true;
    this.enable(false);
    try {
      await this.onAnswer(text);
    } catch (err) {
      this.showError(err.status === 422 ? `Not taken: ${err.message}` : `The answer was not taken: ${err.message}`);
      this.enable(true);
    } finally {
      this.sending = false;
    }
  }

  showError(text) {
    this.error.textContent = text;
    this.error.hidden = false;
  }

  destroy() {
    clearTimeout(this.timer);
    this.el.remove();
  }
}

export class QuestionDesk {
  /** `host()`: where the cards go (null off the chat page); `currentChat()`: the open chat. */
  constructor({ world, host, currentChat, onAsked, onChange }) {
    Object.assign(this, { world, host, currentChat, onAsked, onChange });
    this.pending = new Map(); // questionId -> question document
    this.gone = new Set(); // answered (or being answered): never shown again
    this.cards = new Map(); // questionId -> QuestionCard on the page
  }

  /** The questions waiting in `chat`, read from the API (events may have come meanwhile). */
  async load(chat) {
    let found;
    try {
      found = (await api.questions(this.world, chat)).questions;
    } catch (err) {
      if (err.status !== 404 && err.status !== 405) toast(err.message, { error: true });
      return;
    }
    for (const q of found) this.add(q);
    this.refresh();
  }

  /** Read `chat`'s questions afresh (messages were removed from it): those the server no
   * longer has leave the page; one asked meanwhile stays. */
  async reread(chat) {
    const before = [...this.pending.values()].filter((q) => q.chatId === chat).map((q) => q.questionId);
    let found;
    try {
      found = (await api.questions(this.world, chat)).questions;
    } catch (err) {
      if (err.status !== 404) toast(err.message, { error: true });
      return;
    }
    const still = new Set(found.map((q) => q.questionId));
    for (const id of before) if (!still.has(id)) this.done(id);
    for (const q of found) this.add(q);
    this.refresh();
  }

  add(q) {
    if (this.gone.has(q.questionId)) return;
    this.pending.set(q.questionId, { ...(this.pending.get(q.questionId) ?? {}), ...q });
    this.onAsked?.(q);
  }

  /** A `question` event. */
  event(e) {
    if (e.phase === "requested") {
      this.add({
        questionId: e.questionId, agent: e.agent, chatId: e.chatId, question: e.question,
        options: e.options ?? [], allowFreeText: e.detail?.allowFreeText !== false, createdAt: e.createdAt,
      });
    } else if (e.phase === "answered") {
      this.done(e.questionId);
    }
    this.refresh();
  }

  done(id) {
    this.gone.add(id);
    this.pending.delete(id);
    this.cards.get(id)?.destroy();
    this.cards.delete(id);
    this.onChange?.();
  }

  /** The cards on the page are those of the open chat's waiting questions, oldest first. */
  refresh() {
    this.onChange?.();
    const slot = this.host();
    const chat = this.currentChat();
    for (const [id, card] of this.cards) {
      if (!slot || !card.el.isConnected || this.pending.get(id)?.chatId !== chat) {
        card.destroy();
        this.cards.delete(id);
      }
    }
    if (!slot) return;
    for (const q of this.pending.values()) {
      if (q.chatId !== chat || this.cards.has(q.questionId)) continue;
      const card = new QuestionCard(q, { onAnswer: (text) => this.answer(q, text) });
      this.cards.set(q.questionId, card);
      slot.append(card.el);
    }
  }

  async answer(q, text) {
    try {
      await api.answerQuestion(this.world, q.questionId, text);
    } catch (err) {
      if (err.status === 409 || err.status === 404) {
        toast(`That question was answered already (${err.message}).`);
        this.done(q.questionId);
        return;
      }
      throw err;
    }
    this.done(q.questionId);
  }

  destroy() {
    for (const card of this.cards.values()) card.destroy();
    this.cards.clear();
  }
}

