// Editing a call before approving it (SPEC §7.2 F2): the fields a person changes for each kind
// of tool — the command line of shell_cmd, the content of write_file, the old and new text of
// edit_file, the arguments as JSON for any other tool — and the arguments they make. The
// server checks the edited call afresh (schema, policy) before anything runs.

import { h } from "./dom.js";

const MASKED = /\[REDACTED(:[^\]]*)?\]/;

/** The fields of one tool's call, as {key, label, value} (value: the text shown to edit). */
export function editableFields(toolName, args, shell) {
  if (toolName === "shell_cmd") {
    // The whole line as it would run (command and its quoted parameters), so the person edits
    // exactly what they were shown; the edited line is sent as the command alone. Without
    // that line, a call with parameters is edited as JSON, parameters and all.
    if (typeof shell?.commandLine === "string") return [{ key: "command", label: "Command line", value: shell.commandLine, whole: true }];
    if (!args.parameters?.length) return [{ key: "command", label: "Command line", value: String(args.command ?? "") }];
  }
  if (toolName === "write_file" && typeof args.content === "string") {
    return [{ key: "content", label: `Content of ${args.path ?? "the file"}`, value: args.content }];
  }
  if (toolName === "edit_file" && typeof args.old === "string" && typeof args.new === "string") {
    return [
      { key: "old", label: "Replace this text", value: args.old },
      { key: "new", label: "With this text", value: args.new },
    ];
  }
  return [{ key: null, label: "Arguments (JSON)", value: JSON.stringify(args, null, 2) }];
}

/** The editor: one text area per field; `read()` gives the edited arguments, or throws an
 * Error saying what is wrong with them (not JSON, not an object). */
export class CallEditor {
  constructor(toolName, args, shell) {
    this.toolName = toolName;
    this.args = args;
    this.fields = editableFields(toolName, args, shell).map((f, i) => {
      const id = `edit-field-${i}`;
      const area = h("textarea", {
        id, testid: f.key ? `edit-${f.key}` : "edit-json", spellcheck: "false", class: "edit-area",
        rows: Math.min(12, Math.max(2, f.value.split("\n").length + 1)), value: f.value,
      });
      return { ...f, area, row: [h("label", { for: id }, f.label), area] };
    });
    const masked = Object.values(args).some((v) => MASKED.test(typeof v === "string" ? v : JSON.stringify(v)));
    this.el = h("div", { class: "call-editor", testid: "approval-editor" },
      this.fields.map((f) => f.row),
      masked ? h("p", { class: "error-text", testid: "edit-masked" },
        "Some values are masked ([REDACTED:…]): what you approve is sent as written here, masks included.") : null);
  }

  focus() {
    this.fields[0]?.area.focus();
  }

  /** The arguments to run: the original ones with the edited fields in their place. */
  read() {
    if (this.fields.length === 1 && this.fields[0].key === null) {
      let value;
      try {
        value = JSON.parse(this.fields[0].area.value);
      } catch (err) {
        throw new Error(`The arguments are not JSON: ${err.message}`);
      }
      if (!value || typeof value !== "object" || Array.isArray(value)) throw new Error("The arguments must be a JSON object.");
      return value;
    }
    const edited = { ...this.args };
    if (this.fields.some((f) => f.whole)) delete edited.parameters; // the line holds them now
    for (const f of this.fields) edited[f.key] = f.area.value;
    return edited;
  }
}
