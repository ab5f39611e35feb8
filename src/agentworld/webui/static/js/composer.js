// The message box: Enter sends, Shift+Enter starts a new line; typing "@" offers the world's
// agent names (arrows, Enter or Tab to take one, Esc to close); the line above says who will
// receive the message, by the paragraph-start rule the runtime applies.

import { h, replace } from "./dom.js";
import { mentionAt, recipients } from "./mentions.js";

export class Composer {
  constructor({ agents, mainAgent, onSend, onStop }) {
    this.agents = agents; // () => [names]
    this.mainAgent = mainAgent; // () => name | null
    this.onSend = onSend;
    this.options = [];
    this.active = 0;
    this.input = h("textarea", {
      rows: 2, testid: "composer-input", "aria-label": "Message", placeholder: "Message… (@name to address an agent; Enter sends, Shift+Enter for a new line)",
      "aria-autocomplete": "list", "aria-controls": "mention-list", "aria-expanded": "false",
      onInput: () => this.update(), onKeydown: (e) => this.key(e), onBlur: () => setTimeout(() => this.closeList(), 150),
    });
    this.preview = h("div", { class: "recipients", testid: "composer-recipients", "aria-live": "polite" });
    this.list = h("ul", { class: "mention-list", id: "mention-list", role: "listbox", testid: "mention-list", hidden: true });
    this.send = h("button", { type: "submit", class: "primary", testid: "composer-send" }, "Send");
    // Stops the chat's running work: the turn is cancelled, a running tool killed.
    this.stop = h("button", { type: "button", testid: "composer-stop", title: "Stop the agents' work in this chat", onClick: () => onStop() }, "Stop");
    this.el = h("form", { class: "composer", testid: "composer", onSubmit: (e) => { e.preventDefault(); this.submit(); } },
      this.list, this.preview, h("div", { class: "row" }, this.input, this.send, this.stop));
    this.update();
  }

  /** Send what is in the box. The box is emptied at once, so what the person types while it
   * is sent stays (and comes after the text again if sending fails); the focus is taken back
   * only from the Send button, never from where the person has gone meanwhile. */
  async submit() {
    const text = this.input.value;
    if (!text.trim()) return;
    this.send.disabled = true;
    this.input.value = "";
    this.update();
    try {
      await this.onSend(text);
    } catch {
      this.input.value = text + this.input.value; // the reason is shown by onSend
      this.update();
    } finally {
      this.send.disabled = false;
      const at = document.activeElement;
      if (at === this.send || at === document.body || at === null) this.input.focus();
    }
  }

  key(e) {
    if (!this.list.hidden) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        const step = e.key === "ArrowDown" ? 1 : -1;
        this.active = (this.active + step + this.options.length) % this.options.length;
        this.renderList();
        return;
      }
      if (e.key === "Enter" || e.key === "Tab") {
        e.preventDefault();
        this.take(this.options[this.active]);
        return;
      }
      if (e.key === "Escape") {
        e.preventDefault();
        this.closeList();
        return;
      }
    }
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      this.submit();
    }
  }

  update() {
    this.renderPreview();
    const at = mentionAt(this.input.value, this.input.selectionStart ?? this.input.value.length);
    if (!at) return this.closeList();
    const query = at.query.toLowerCase();
    this.options = this.agents().filter((n) => n.toLowerCase().startsWith(query));
    if (!this.options.length) return this.closeList();
    this.active = Math.min(this.active, this.options.length - 1);
    this.renderList();
  }

  renderList() {
    replace(this.list, this.options.map((name, i) => h("li", {
      role: "option", id: `mention-${i}`, "aria-selected": String(i === this.active), testid: "mention-option",
      onMousedown: (e) => { e.preventDefault(); this.take(name); },
    }, `@${name}`)));
    this.list.hidden = false;
    this.input.setAttribute("aria-expanded", "true");
    this.input.setAttribute("aria-activedescendant", `mention-${this.active}`);
  }

  closeList() {
    this.list.hidden = true;
    this.active = 0;
    this.input.setAttribute("aria-expanded", "false");
    this.input.removeAttribute("aria-activedescendant");
  }

  take(name) {
    const caret = this.input.selectionStart ?? this.input.value.length;
    const at = mentionAt(this.input.value, caret);
    if (!at) return;
    const before = this.input.value.slice(0, at.start);
    const after = this.input.value.slice(caret);
    const insert = `@${name} `;
    this.input.value = before + insert + after.replace(/^\S*/, "").replace(/^ /, "");
    const pos = before.length + insert.length;
    this.input.setSelectionRange(pos, pos);
    this.closeList();
    this.renderPreview();
  }

  renderPreview() {
    const names = this.agents();
    const who = recipients(this.input.value, names, this.mainAgent());
    let text;
    if (!names.length) text = "No agents yet: add one above to get answers.";
    else if (who.reason === "mid-text") text = "No agent will answer: mentions count only at the start of a line.";
    else if (!who.agents.length) text = `No agent will answer: ${who.unknown.map((n) => `@${n}`).join(", ")} is not an agent here.`;
    else {
      const lead = who.reason === "everyone" ? "To everyone: " : who.reason === "main" ? "To the main agent: " : "To: ";
      text = lead + who.agents.join(", ") + (who.unknown.length ? ` (not agents: ${who.unknown.join(", ")})` : "");
    }
    this.preview.textContent = text;
    this.preview.classList.toggle("nobody", !who.agents.length);
    this.preview.dataset.recipients = who.agents.join(",");
  }
}
