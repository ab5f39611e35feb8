// A world as a file in the world's settings (docs/worlds.md): "Export" downloads the file
// `agentworld export` writes; "Import world file" reads a .toml, shows the plan (a dry run of
// POST /api/worlds/apply) and applies it only when the person clicks Apply — the dialog has no
// text field and opens with Cancel focused, so no Enter meant for something else confirms it.

import { api } from "./api.js";
import { h, modal, toast } from "./dom.js";

function planRows(plan) {
  if (!plan.changes.length) return [h("p", { testid: "world-plan-none" }, "No changes: the world already matches the file.")];
  const rows = plan.changes.map((c) => h("li", { testid: "world-plan-change" },
    `${c.action} ${c.kind} ${c.name}`, c.fields.length ? h("span", { class: "muted" }, ` (${c.fields.join(", ")})`) : ""));
  const kept = plan.kept.map((a) => h("li", { testid: "world-plan-kept", class: "muted" }, `kept agent ${a} (not in the file)`));
  const keptRules = (plan.keptRules || []).map((r) => h("li", { testid: "world-plan-kept", class: "muted" }, `kept rule ${r} (not in the file)`));
  return [h("ul", { testid: "world-plan" }, rows, kept, keptRules)];
}

/** Show the plan of `text` and apply it when the person clicks Apply; true when applied. */
async function importFile(text, fileName) {
  let plan;
  try {
    plan = await api.applyWorldFile(text, true);
  } catch (err) {
    toast(`${fileName}: ${err.message}`, { error: true });
    return false;
  }
  const go = await modal((close) => [
    h("h2", {}, `Import ${fileName} into world ${plan.world}`),
    ...planRows(plan),
    h("div", { class: "actions" },
      h("button", { type: "button", testid: "world-import-cancel", autofocus: true, onClick: () => close(false) }, "Cancel"),
      plan.changes.length
        ? h("button", { type: "button", class: "primary", testid: "world-import-apply", onClick: () => close(true) }, "Apply")
        : ""),
  ], { testid: "world-import-dialog", label: `Import ${fileName}` });
  if (!go) return false;
  try {
    const done = await api.applyWorldFile(text, false);
    toast(`World ${done.world}: ${done.changes.length} change${done.changes.length === 1 ? "" : "s"} applied.`);
    return true;
  } catch (err) {
    toast(err.message, { error: true });
    return false;
  }
}

/** The settings page's "World file" card; `onApplied(worldName)` after an import. */
export function worldFileSection(world, onApplied) {
  const picker = h("input", { type: "file", accept: ".toml,application/toml", testid: "world-import-file", hidden: true });
  picker.addEventListener("change", async () => {
    const file = picker.files?.[0];
    picker.value = "";
    if (!file) return;
    const text = await file.text();
    if (await importFile(text, file.name)) onApplied();
  });
  return h("section", { class: "card" }, h("h2", {}, "World file"),
    h("p", { class: "muted" }, "The world's settings and agents as a TOML file (no secrets), as agentworld export writes it. Importing shows the changes before making them."),
    h("div", { class: "actions" },
      h("a", { class: "btn", testid: "world-export", href: api.worldExportUrl(world), download: `${world}.toml` }, "Export"),
      h("button", { type: "button", testid: "world-import", onClick: () => picker.click() }, "Import world file"),
      picker));
}
