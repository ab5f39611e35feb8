// What a person can do with one message of the transcript (SPEC §7.3 K1, K2): edit a person's
// message and run the world again from it, branch a new chat from it, or delete it and all
// that follows. The actions show on hover, and behind a "⋯" button on touch screens and phones.
// Removing messages is asked first, saying how many go; the question's Cancel has the focus and
// its confirm button waits a moment before it takes a click, so no Enter or click meant for
// something else confirms it (C4). A refusal (409: another process runs the chat) is shown in
// the message itself, and nothing is changed. The removal itself reaches the view as the `crud`
// event every tab gets (world.js), so this tab and the others show the same.

import { api } from "./api.js";
import { ARM_MS } from "./approval_card.js";
import { h, modal } from "./dom.js";

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

/** Ask before removing messages. Resolves true only for a click (or Enter, Space) on the
 * confirm button once it is armed; Cancel has the focus, Esc cancels. */
export function confirmRemoval(question, detail, action) {
  return modal((close) => {
    const ok = h("button", { type: "button", class: "danger", testid: "cut-confirm", disabled: true, onClick: () => close(true) }, action);
    setTimeout(() => { ok.disabled = false; }, ARM_MS);
    return [
      h("h2", {}, question),
      h("p", { testid: "cut-detail" }, detail),
      h("div", { class: "actions" },
        h("button", { type: "button", testid: "cut-cancel", autofocus: true, onClick: () => close(false) }, "Cancel"),
        ok),
    ];
  }, { testid: "cut-dialog", label: question }).then((answer) => answer === true);
}

/** Why the server refused, in the words the person needs. */
function refusal(err, what) {
  if (err.status === 409) return `Another process is running this chat, so nothing was ${what}. Stop its work there, or try again when it has finished.`;
  if (err.status === 404) return `Nothing was ${what}: this message is no longer in the chat (${err.message}).`;
  return `Nothing was ${what}: ${err.message}`;
}

export class MessageActions {
  /** `view`: the ChatView; `world()`: the world it shows; `onBranched(chatId)`: open
   * the new chat. */
  constructor({ view, world, onBranched }) {
    Object.assign(this, { view, world, onBranched });
  }

  /** The tools of message `m`: "⋯" (touch, phones) and the actions it reveals. */
  tools(m) {
    if (m.role === "tool") return null;
    const person = m.role === "user";
    const actions = h("div", { class: "msg-actions", role: "group", "aria-label": "Message actions", testid: "message-actions" },
      person ? h("button", { type: "button", testid: "message-edit", onClick: () => this.edit(m) }, "Edit") : null,
      h("button", { type: "button", testid: "message-branch", title: "A new chat with the messages up to this one", onClick: () => this.branch(m) }, "Branch from here"),
      h("button", { type: "button", class: "danger", testid: "message-delete", title: "Remove this message and everything after it", onClick: () => this.remove(m) }, "Delete from here"));
    const more = h("button", {
      type: "button", class: "msg-more", testid: "message-more", "aria-label": "Message actions", "aria-expanded": "false",
      onClick: () => {
        const open = wrap.classList.toggle("open");
        more.setAttribute("aria-expanded", String(open));
      },
    }, "⋯");
    const wrap = h("div", { class: "msg-tools" }, more, actions);
    return wrap;
  }

  /** A sentence for the question before a removal when an answer is being written now. */
  writing() {
    return this.view.streams.size ? "The answer being written now is stopped. " : "";
  }

  /** Show why an action on message `id` did nothing, under it (null clears it). */
  say(id, text) {
    const node = this.view.nodes.get(id);
    if (!node) return;
    node.querySelector(":scope > .msg-error")?.remove();
    if (text) node.append(h("p", { class: "msg-error error-text", role: "alert", testid: "message-error" }, text));
  }

  close(id) {
    const tools = this.view.nodes.get(id)?.querySelector(".msg-tools");
    tools?.classList.remove("open");
    tools?.querySelector(".msg-more")?.setAttribute("aria-expanded", "false");
  }

  async branch(m) {
    this.say(m.messageId, null);
    this.close(m.messageId);
    let made;
    try {
      made = await api.branch(this.world(), m.chatId, m.messageId);
    } catch (err) {
      this.say(m.messageId, refusal(err, "branched"));
      return;
    }
    await this.onBranched(made.chatId);
  }

  async remove(m) {
    this.say(m.messageId, null);
    this.close(m.messageId);
    const n = this.view.countFrom(m.messageId);
    const after = n - 1;
    const yes = await confirmRemoval(
      "Delete from here?",
      `This message and ${after ? `the ${plural(after, "message", "messages")} after it` : "nothing after it (it is the last)"} are removed `
        + `from the chat: ${plural(n, "message", "messages")} in all, with the agents' memory of them and any request waiting in them. `
        + `${this.writing()}The audit log keeps a record.`,
      `Delete ${plural(n, "message", "messages")}`);
    if (!yes) return;
    try {
      await api.deleteFrom(this.world(), m.chatId, m.messageId);
    } catch (err) {
      this.say(m.messageId, refusal(err, "deleted"));
      return;
    }
    this.view.markGoing(m.messageId);
  }

  /** Turn the message into an editor prefilled with its text. */
  edit(m) {
    const node = this.view.nodes.get(m.messageId);
    if (!node || node.querySelector(".msg-editor")) return;
    this.say(m.messageId, null);
    this.close(m.messageId);
    const body = node.querySelector("[data-testid=message-body]");
    const input = h("textarea", {
      class: "edit-text", testid: "edit-input", rows: 3, "aria-label": "Edited message",
      onKeydown: (e) => {
        if (e.key === "Escape") { e.preventDefault(); done(); }
        else if (e.key === "Enter" && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey && !e.isComposing) {
          e.preventDefault(); // no key press of this Enter reaches the question that opens
          save();
        }
      },
    });
    input.value = m.content ?? "";
    const error = h("p", { class: "error-text", role: "alert", testid: "edit-error", hidden: true });
    const saveBtn = h("button", { type: "button", class: "primary", testid: "edit-save", onClick: () => save() }, "Save and re-run");
    const editor = h("div", { class: "msg-editor", testid: "message-editor" }, input,
      h("div", { class: "row" }, saveBtn,
        h("button", { type: "button", testid: "edit-cancel", onClick: () => done() }, "Cancel"),
        h("span", { class: "muted hint" }, "Enter saves, Shift+Enter starts a new line, Esc cancels")),
      error);
    const done = () => {
      editor.remove();
      if (body) body.hidden = false;
    };
    const save = async () => {
      const text = input.value;
      if (!text.trim()) {
        error.textContent = "The message cannot be empty; to remove it, use Delete from here.";
        error.hidden = false;
        return;
      }
      const after = this.view.countFrom(m.messageId) - 1;
      const yes = await confirmRemoval(
        "Save the edit and run again from it?",
        `${after ? `The ${plural(after, "message", "messages")} after this one ${after === 1 ? "is" : "are"} removed` : "No message comes after this one"}; `
          + `the message is replaced by the edited text and the agents answer it again. ${this.writing()}The audit log keeps a record.`,
        after ? `Remove ${plural(after, "message", "messages")} and re-run` : "Save and re-run");
      if (!yes) {
        input.focus();
        return;
      }
      saveBtn.disabled = true;
      error.hidden = true;
      try {
        await api.editMessage(this.world(), m.chatId, m.messageId, text);
      } catch (err) {
        error.textContent = refusal(err, "changed");
        error.hidden = false;
        saveBtn.disabled = false;
        return;
      }
      done();
      this.view.markGoing(m.messageId);
    };
    if (body) body.hidden = true;
    node.querySelector(".msg-head").after(editor);
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  }
}
