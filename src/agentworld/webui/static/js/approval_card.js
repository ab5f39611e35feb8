// One approval request as a card beside the composer (SPEC §7.1 C4): keys typed for something
// else never answer it. The card never takes the focus when it appears; the person moves to
// it (a click, Alt+Shift+A, or a Review button). Its buttons stay disabled (visibly) for
// ARM_MS after it appears, so a click meant for what was there before does nothing; a letter
// (D, O, S, A) answers only once the card has had the focus for ARM_MS too. Always is never
// one step: it asks again, showing the exact command and that it holds for the whole world
// until revoked. A file tool's change shows as its diff; Edit turns the call into fields the
// person can change, and "Approve edited" (armed afresh) sends the changed arguments.

import { CallEditor } from "./call_editor.js";
import { diffView } from "./diff_view.js";
import { h, replace, timeEl } from "./dom.js";
import { inline, renderMarkdown } from "./markdown.js";

export const ARM_MS = 800;
const LONG_AT = 160;
const FILE_TOOLS = new Set(["write_file", "edit_file"]);
const CHANGE_KEYS = new Set(["content", "old", "new"]);

const DECISIONS = [
  { key: "d", label: "Deny", decision: "deny", scope: "once", testid: "approval-deny", cls: "danger" },
  { key: "o", label: "Approve once", decision: "approve", scope: "once", testid: "approval-once", cls: "primary" },
  { key: "s", label: "For this session", decision: "approve", scope: "session", testid: "approval-session" },
  { key: "a", label: "Always…", decision: "approve", scope: "always", testid: "approval-always" },
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

/** The approval document's `sandbox` key as a person reads it: where the command may write
 * and whether it reaches the network, or a plain warning that it runs uncontained. Nothing
 * when the document has no such key (a server that does not contain commands). */
export function sandboxLine(sandbox) {
  if (!sandbox || typeof sandbox !== "object") return null;
  if (sandbox.active === true) {
    const where = Array.isArray(sandbox.writable) && sandbox.writable.length ? sandbox.writable.map(String).join(", ") : "nowhere";
    const net = sandbox.network === "allow" ? "network allowed" : "no network";
    return h("p", { class: "sandbox-line", testid: "approval-sandbox", dataset: { active: "true" } }, `sandboxed: writes only in ${where}, ${net}`);
  }
  const why = typeof sandbox.problem === "string" && sandbox.problem ? ` (${sandbox.problem})` : "";
  return h("p", { class: "sandbox-line warning", testid: "approval-sandbox", role: "note", dataset: { active: "false" } },
    h("strong", {}, `NOT sandboxed${why}`), ": the command can write anywhere you can, and reach the network");
}

/** What "Always" would allow, in the words the confirmation shows. */
function exactCall(item, shell, args) {
  if (shell?.commandLine) return shell.commandLine;
  return `${item.toolName} ${JSON.stringify(args)}`;
}

/** Why the server refused an edited call, in the words the card shows. */
function refusal(err) {
  const why = String(err.message).replace(/\.+$/, "");
  if (err.code === "denied_by_policy") return `Refused by the policy: ${why}. Nothing ran; the request is still waiting.`;
  if (err.status === 422) return `Not a valid call: ${why}. Nothing ran; the request is still waiting.`;
  return `The answer was not taken: ${err.message}`;
}

export class ApprovalCard {
  /** `onAnswer(decision, scope)` answers; `onEdited(args, scope)` approves the call as edited
   * (a promise, rejected with the server's refusal); `onLater()` puts it off. */
  constructor(item, { info = {}, world, chatName, position, total, onAnswer, onEdited, onLater }) {
    this.item = item;
    this.onAnswer = onAnswer;
    this.onEdited = onEdited;
    this.onLater = onLater;
    this.world = world;
    this.shownAt = performance.now();
    this.focusedAt = null;
    this.armed = false;
    this.timers = [];
    this.shell = item.shell ?? info.shell;
    this.args = item.toolArgs && Object.keys(item.toolArgs).length ? item.toolArgs : info.toolArguments ?? {};
    const sandbox = item.sandbox ?? info.sandbox;
    this.buttons = DECISIONS.map((d) => h("button", {
      type: "button", class: d.cls, testid: d.testid, "aria-keyshortcuts": d.key, disabled: true,
      onClick: () => this.choose(d),
    }, d.label, h("kbd", { "aria-hidden": "true" }, d.key.toUpperCase())));
    this.editButton = h("button", {
      type: "button", testid: "approval-edit", disabled: true, title: "Change the call before approving it",
      onClick: () => this.startEdit(),
    }, "Edit…");
    this.buttons.push(this.editButton);
    this.decisions = h("div", { class: "decisions", role: "group", "aria-label": "Decision" }, this.buttons);
    // A file tool's text is what its diff shows: the argument list does not repeat it.
    const diff = item.diff ?? info.diff;
    const inDiff = (k) => typeof diff === "string" && diff !== "" && FILE_TOOLS.has(item.toolName) && CHANGE_KEYS.has(k);
    this.argsView = h("div", { class: "args-view" },
      h("div", { class: "muted" }, "Arguments"),
      h("ul", { class: "args", testid: "approval-args" }, Object.entries(this.args).map(([k, v]) => (inDiff(k)
        ? h("li", {}, h("span", { class: "key" }, `${k}: `), h("span", { class: "muted" }, "shown as the change above"))
        : argumentRow(k, v)))));
    this.hint = h("p", { class: "muted arm-hint", testid: "approval-hint" }, "Alt+Shift+A or a click moves here; the buttons wait a moment after they appear.");
    this.el = h("section", {
      class: "approval-card", testid: "approval-dialog", tabindex: "-1", role: "region",
      "aria-labelledby": "approval-title", dataset: { approvalId: item.approvalId, armed: "false", lettersArmed: "false" },
      onFocusin: () => this.focused(), onFocusout: (e) => { if (!this.el.contains(e.relatedTarget)) this.blurred(); },
      onKeydown: (e) => this.key(e),
    },
    h("div", { class: "arm-bar", "aria-hidden": "true" }),
    h("h2", { id: "approval-title" }, `${item.agent} asks to run ${item.toolName}`),
    total > 1 ? h("p", { class: "muted" }, `Request ${position} of ${total} waiting in this world`) : null,
    h("dl", { class: "approval-meta" },
      h("dt", {}, "Agent"), h("dd", { testid: "approval-agent" }, item.agent),
      h("dt", {}, "Tool"), h("dd", { testid: "approval-tool" }, item.toolName),
      h("dt", {}, "Chat"), h("dd", {}, chatName),
      h("dt", {}, "Asked"), h("dd", {}, timeEl(item.createdAt) ?? "")),
    this.shell ? [
      h("div", { class: "command-line", testid: "approval-command" }, this.shell.commandLine ?? ""),
      this.shell.directory ? h("p", { class: "muted" }, `in ${this.shell.directory}`) : null,
      this.shell.understood === false ? h("p", { class: "error-text" }, `Not fully understood: ${this.shell.note || "it can only be asked about"}`) : null,
    ] : null,
    sandboxLine(sandbox),
    diffView(diff),
    this.argsView,
    info.reason ? [h("div", { class: "muted" }, `${item.agent} said`), h("blockquote", { class: "md", testid: "approval-reason" }, renderMarkdown(info.reason))] : null,
    item.message ? inline(String(item.message), h("p", { testid: "approval-message" })) : null,
    this.decisions,
    h("div", { class: "actions" }, this.hint, h("span", { class: "spacer" }),
      h("button", { type: "button", testid: "approval-later", onClick: () => this.onLater() }, "Later (Esc)")));
    this.timers.push(setTimeout(() => this.arm(), ARM_MS));
  }

  /** The buttons answer from now on. */
  arm() {
    this.armed = true;
    this.el.dataset.armed = "true";
    for (const b of this.buttons) b.disabled = false;
    this.updateLetters();
  }

  /** Whether a letter answers now: the card shown and focused, each for ARM_MS. */
  lettersArmed() {
    const now = performance.now();
    return this.armed && this.focusedAt !== null && now - this.focusedAt >= ARM_MS && now - this.shownAt >= ARM_MS;
  }

  updateLetters() {
    this.el.dataset.lettersArmed = String(this.lettersArmed());
  }

  focused() {
    if (this.focusedAt !== null) return;
    this.focusedAt = performance.now();
    this.timers.push(setTimeout(() => this.updateLetters(), ARM_MS + 20));
  }

  blurred() {
    this.focusedAt = null;
    this.updateLetters();
  }

  /** The person moves here (Alt+Shift+A, Review): the card itself takes the focus, not a
   * button, so Enter does nothing until a button is chosen. */
  focus() {
    this.el.focus({ preventScroll: false });
    this.el.scrollIntoView({ block: "nearest" });
  }

  key(e) {
    if (e.altKey || e.ctrlKey || e.metaKey || e.isComposing || e.target.matches("input, textarea, select")) return;
    if (e.key === "Escape") {
      e.preventDefault();
      if (this.confirming) this.cancelAlways();
      else if (this.editor) this.cancelEdit();
      else this.onLater();
      return;
    }
    // Always is confirmed with its button only, and an edited call approved with its button
    // only: never a letter.
    if (this.confirming || this.editor) return;
    const d = DECISIONS.find((x) => x.key === e.key.toLowerCase());
    if (!d) return;
    e.preventDefault(); // a letter here is never typed anywhere else
    if (e.repeat || !this.lettersArmed()) {
      this.hint.textContent = "Not yet: the card must have been shown and focused for a moment before a letter answers.";
      this.hint.dataset.refused = "true";
      return;
    }
    this.choose(d);
  }

  choose(d) {
    if (!this.armed) return;
    if (d.scope === "always") this.askAlways();
    else this.onAnswer(d.decision, d.scope);
  }

  /** The second step of Always: the exact call, and what "always" means. */
  askAlways() {
    this.confirming = true;
    const cancel = h("button", { type: "button", testid: "approval-always-cancel", onClick: () => this.cancelAlways() }, "Cancel");
    const yes = h("button", {
      type: "button", class: "danger", testid: "approval-always-confirm", disabled: true,
      onClick: () => { if (this.confirming && !yes.disabled) this.onAnswer("approve", "always"); },
    }, "Yes, always allow it");
    this.timers.push(setTimeout(() => { yes.disabled = false; }, ARM_MS));
    const panel = h("div", { class: "always-confirm", testid: "approval-always-panel", role: "group", "aria-labelledby": "always-title" },
      h("h3", { id: "always-title" }, "Always allow this?"),
      h("div", { class: "command-line", testid: "approval-always-command" }, exactCall(this.item, this.shell, this.args)),
      h("p", { testid: "approval-always-scope" },
        `For the whole world ${this.world}, until revoked: any agent in any chat may run it without asking. `,
        "Revoke it on the Policy page."),
      h("div", { class: "actions" }, cancel, yes));
    replace(this.decisions, panel);
    cancel.focus();
  }

  cancelAlways() {
    this.confirming = false;
    replace(this.decisions, this.buttons);
    this.buttons[3].focus();
  }

  /** Edit: the call's fields to change, and "Approve edited" armed afresh, so the click that
   * opened the editor cannot also approve. */
  startEdit() {
    if (!this.armed || this.editor) return;
    this.editor = new CallEditor(this.item.toolName, this.args, this.shell);
    this.editError = h("p", { class: "error-text", testid: "approval-edit-error", role: "alert", hidden: true });
    this.scope = h("select", { testid: "approval-edited-scope", "aria-label": "For" },
      h("option", { value: "once" }, "this call only"), h("option", { value: "session" }, "this session"));
    this.approveEdited = h("button", {
      type: "button", class: "primary", testid: "approval-edited", disabled: true, onClick: () => this.sendEdited(),
    }, "Approve edited");
    const cancel = h("button", { type: "button", testid: "approval-edit-cancel", onClick: () => this.cancelEdit() }, "Back to the call as asked");
    this.timers.push(setTimeout(() => { if (this.approveEdited) this.approveEdited.disabled = false; }, ARM_MS));
    const panel = h("div", { class: "edit-panel", testid: "approval-edit-panel", role: "group", "aria-label": "Edit the call" },
      h("h3", {}, "Edit the call, then approve it"),
      h("p", { class: "muted" }, "The server checks the edited call against the policy again; a refused edit runs nothing."),
      this.editor.el, this.editError,
      h("div", { class: "actions" }, cancel, h("span", { class: "spacer" }),
        h("label", { class: "inline-label" }, "For ", this.scope), this.approveEdited));
    this.argsView.hidden = true;
    replace(this.decisions, panel);
    this.editor.focus();
  }

  cancelEdit() {
    this.editor = null;
    this.approveEdited = null;
    this.argsView.hidden = false;
    replace(this.decisions, this.buttons);
    this.editButton.focus();
  }

  async sendEdited() {
    const button = this.approveEdited;
    if (!button || button.disabled || !this.armed) return;
    this.editError.hidden = true;
    let args;
    try {
      args = this.editor.read();
    } catch (err) {
      this.showEditError(err.message);
      return;
    }
    button.disabled = true;
    try {
      await this.onEdited(args, this.scope.value);
    } catch (err) {
      this.showEditError(refusal(err));
    } finally {
      if (this.approveEdited === button) button.disabled = false;
    }
  }

  showEditError(text) {
    this.editError.textContent = text;
    this.editError.hidden = false;
    this.editError.scrollIntoView({ block: "nearest" });
  }

  destroy() {
    for (const t of this.timers) clearTimeout(t);
    this.el.remove();
  }
}
