// Policy and audit: the rules in force (source, priority), a form that asks the world's own
// engine what it would decide for a call (`policy test`), the remembered approvals with
// revoke, and the audit log of requests and decisions.

import { api } from "./api.js";
import { confirmDialog, h, replace, timeEl, toast } from "./dom.js";

/** A table that stays readable: words are never split, only the cells of the columns in `long`
 * (patterns, arguments) wrap anywhere; on a phone each row becomes a card, each value under
 * its column's name (the cell's `data-label`). */
function table(testid, headers, rows, long = []) {
  if (!rows.length) return h("p", { class: "muted", testid }, "None.");
  const cls = (i) => (long.includes(i) ? "long" : null);
  return h("div", { class: "table-wrap" }, h("table", { testid, class: "data-table" },
    h("thead", {}, h("tr", {}, headers.map((t, i) => h("th", { class: cls(i), scope: "col" }, t)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((c, i) => h("td", { class: cls(i), dataset: { label: headers[i] } }, c)))))));
}

const short = (value) => (value === null || value === undefined ? "" : typeof value === "string" ? value : JSON.stringify(value));

export async function policyPage(world, root) {
  const rulesBox = h("div", {}, "Loading…");
  const grantsBox = h("div", {}, "Loading…");
  const auditBox = h("div", {}, "Loading…");
  const verdict = h("div", { testid: "policy-verdict", "aria-live": "polite" });
  const tool = h("input", { id: "pt-tool", testid: "policy-test-tool", value: "shell_cmd", autocomplete: "off" });
  const args = h("textarea", { id: "pt-args", testid: "policy-test-args", rows: 3, spellcheck: "false" });
  args.value = '{"command": "ls -la"}';
  const testForm = h("form", { testid: "policy-test-form", onSubmit: async (e) => {
    e.preventDefault();
    let parsed;
    try {
      parsed = args.value.trim() ? JSON.parse(args.value) : {};
    } catch (err) {
      replace(verdict, h("span", { class: "error-text" }, `Arguments are not valid JSON: ${err.message}`));
      return;
    }
    try {
      const v = await api.testPolicy(world, { tool: tool.value.trim(), args: parsed });
      const rule = v.rule ? ` by ${v.rule.name || "a rule"} (${v.rule.source ?? "built-in"}, priority ${v.rule.priority})` : " (no rule matched: the default)";
      replace(verdict, h("strong", { dataset: { decision: v.decision } }, v.decision), rule, v.reason ? h("div", { class: "muted" }, v.reason) : null);
    } catch (err) {
      replace(verdict, h("span", { class: "error-text" }, err.message));
    }
  } },
  h("label", { for: "pt-tool" }, "Tool"), tool, h("label", { for: "pt-args" }, "Arguments (JSON)"), args,
  h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", testid: "policy-test-submit" }, "Decide")), verdict);

  replace(root, h("div", { class: "page", testid: "policy-page" },
    h("section", { class: "card" }, h("h2", {}, "Test a call"), testForm),
    h("section", { class: "card" }, h("h2", {}, "Rules in force"), rulesBox),
    h("section", { class: "card" }, h("h2", {}, "Remembered approvals"), grantsBox),
    h("section", { class: "card" }, h("h2", {}, "Audit log"), auditBox)));

  const load = async () => {
    const [rules, grants, audit] = await Promise.allSettled([api.rules(world), api.grants(world), api.audit(world)]);
    replace(rulesBox, rules.status === "fulfilled"
      ? table("policy-rules", ["Priority", "Decision", "Tool", "Match", "Source"], rules.value.rules.map((r) => [
        String(r.priority), r.decision, short(r.toolName) || "*",
        short(r.commandPrefix ?? r.commandRegex ?? r.argsPattern), `${r.source ?? ""}${r.number != null ? ` #${r.number}` : ""}`]), [3])
      : h("p", { class: "error-text" }, rules.reason.message));
    replace(grantsBox, grants.status === "fulfilled"
      ? table("policy-grants", ["Scope", "Tool", "Agent", "Commands", "Writes", "Since", ""], grants.value.grants.map((g) => [
        g.scope, g.toolName, g.agent ?? "any", (g.rootCommands ?? []).join(", "),
        (g.redirectTargets ?? []).join(", ") || "no file", timeEl(g.createdAt) ?? "",
        h("button", { type: "button", class: "danger", testid: "grant-revoke", onClick: async () => {
          if (!(await confirmDialog(`Revoke the ${g.scope} approval of ${g.toolName}?`, { action: "Revoke" }))) return;
          try {
            await api.revokeGrant(world, g.grantId);
            toast("Revoked.");
            load();
          } catch (err) {
            toast(err.message, { error: true });
          }
        } }, "Revoke")]), [3, 4])
      : h("p", { class: "error-text" }, grants.reason.message));
    replace(auditBox, audit.status === "fulfilled"
      ? table("policy-audit", ["When", "Event", "Agent", "Tool", "Arguments", "Decision", "By"], audit.value.audit.slice().reverse().map((a) => [
        timeEl(a.at) ?? "", a.event, a.agent ?? "", a.toolName ?? "", short(a.toolArgs),
        [a.decision, a.scope].filter(Boolean).join(" "), a.actor ?? ""]), [4])
      : h("p", { class: "error-text" }, audit.reason.message));
  };
  await load();
  return load;
}
