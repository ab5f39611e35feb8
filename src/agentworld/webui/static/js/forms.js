// Forms for worlds and agents. Each field knows its API key, so an error the server names
// ("mcpConfig: …", "invalid base URL …") is shown under the field it is about; others show
// at the form's foot. An agent's key is never asked for: only the NAME of the environment
// variable that holds it.

import { api } from "./api.js";
import { h, modal } from "./dom.js";

export const PROVIDERS = ["openai", "anthropic", "google", "azure", "ollama", "xai", "openai-compatible", "scripted"];
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A labelled input for `spec`; returns {el, read(), show(error)}. */
export function field(spec, value) {
  const id = `f-${spec.key}-${Math.random().toString(36).slice(2, 8)}`;
  const error = h("div", { class: "field-error", testid: `error-${spec.key}`, "aria-live": "polite", id: `${id}-err` });
  const common = { id, name: spec.key, testid: `field-${spec.key}`, "aria-describedby": `${id}-err`, required: spec.required || null };
  let input;
  if (spec.type === "select") {
    input = h("select", common, spec.options.map(([v, label]) => h("option", { value: v, selected: v === (value ?? "") }, label)));
  } else if (spec.type === "checkbox") {
    input = h("input", { ...common, type: "checkbox", checked: Boolean(value) });
  } else if (spec.type === "textarea" || spec.type === "lines" || spec.type === "json") {
    const text = spec.type === "lines" ? (value ?? []).join("\n") : spec.type === "json" ? (value ? JSON.stringify(value, null, 2) : "") : value ?? "";
    input = h("textarea", { ...common, rows: spec.rows ?? 3, placeholder: spec.placeholder, spellcheck: spec.type === "textarea" ? null : "false" });
    input.value = text;
  } else {
    input = h("input", { ...common, type: spec.type ?? "text", step: spec.step, min: spec.min, max: spec.max, placeholder: spec.placeholder, autocomplete: "off", value: value ?? "" });
  }
  const label = spec.type === "checkbox"
    ? h("label", { class: "check", for: id }, input, spec.label)
    : h("label", { for: id }, spec.label, spec.hint ? h("span", { class: "hint" }, ` — ${spec.hint}`) : null);
  const el = h("div", { class: "field" }, label, spec.type === "checkbox" ? null : input, error);
  const read = () => {
    error.textContent = "";
    if (spec.type === "checkbox") return input.checked;
    const raw = input.value.trim();
    if (spec.type === "number") return raw === "" ? null : Number(raw);
    if (spec.type === "lines") return raw ? raw.split("\n").map((s) => s.trim()).filter(Boolean) : [];
    if (spec.type === "json") {
      if (!raw) return null;
      try {
        return JSON.parse(raw);
      } catch (err) {
        throw new FieldError(spec.key, `not valid JSON: ${err.message}`);
      }
    }
    if (spec.check && raw) {
      const problem = spec.check(raw);
      if (problem) throw new FieldError(spec.key, problem);
    }
    return raw === "" ? (spec.keepEmpty ? "" : null) : raw;
  };
  return { el, read, input, spec, show: (text) => { error.textContent = text; } };
}

export class FieldError extends Error {
  constructor(key, message) {
    super(message);
    this.key = key;
  }
}

/** A form of fields: collect() → values by key (throws FieldError), fail(err) shows an error. */
export function formOf(specs, values, { testid, submitLabel, onSubmit, extra = [] }) {
  const fields = specs.map((s) => field(s, values?.[s.key]));
  const formError = h("div", { class: "field-error", testid: "form-error", role: "alert" });
  const submit = h("button", { type: "submit", class: "primary", testid: `${testid}-submit` }, submitLabel);
  const form = h("form", { testid, novalidate: true }, h("div", { class: "grid2" }, fields.map((f) => f.el)), formError, h("div", { class: "actions" }, submit, extra));
  const fail = (err) => {
    const key = err.key ?? fields.find((f) => mentions(err.message, f.spec))?.spec.key;
    const target = fields.find((f) => f.spec.key === key);
    if (target) {
      target.show(err.message);
      target.input.focus();
    } else formError.textContent = err.message;
  };
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    formError.textContent = "";
    const out = {};
    try {
      for (const f of fields) out[f.spec.key] = f.read();
    } catch (err) {
      fail(err);
      return;
    }
    submit.disabled = true;
    try {
      await onSubmit(out);
    } catch (err) {
      fail(err);
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function mentions(message, spec) {
  const text = String(message).toLowerCase();
  return [spec.key, ...(spec.aliases ?? [])].some((word) => text.includes(word.toLowerCase()));
}

const empty = (v) => v === null || v === undefined || v === "" || (Array.isArray(v) && !v.length);

/** Only what changed, for PATCH ("", [] and null count as the same empty value); an emptied
 * optional setting is sent as null, which clears it. */
export function changes(values, before) {
  const out = {};
  for (const [key, value] of Object.entries(values)) {
    const was = before?.[key];
    if (empty(value) && empty(was)) continue;
    if (JSON.stringify(value) !== JSON.stringify(was)) out[key] = value;
  }
  return out;
}

export const WORLD_CREATE_FIELDS = [
  { key: "name", label: "Name", required: true, hint: "letters, digits, _ and -", aliases: ["name"] },
  { key: "description", label: "Description" },
  { key: "turnLimit", label: "Turn limit", type: "number", min: 1, placeholder: "5", aliases: ["turn"] },
];

export function worldSettingsFields(agents) {
  return [
    { key: "description", label: "Description", keepEmpty: true },
    { key: "turnLimit", label: "Turn limit", type: "number", min: 1, hint: "LLM calls per agent before a person takes over", aliases: ["turn limit", "turn_limit"] },
    { key: "mainAgent", label: "Main agent", type: "select", options: [["", "(none: every agent answers)"], ...agents.map((a) => [a.name, a.name])], aliases: ["main agent", "main_agent"] },
    { key: "approvalTimeout", label: "Approval timeout (s)", type: "number", min: 1, aliases: ["approval timeout", "approval_timeout"] },
    { key: "maxIterations", label: "Max iterations", type: "number", min: 1, aliases: ["iteration"] },
    { key: "budget", label: "Budget per chat (USD)", type: "number", step: "any", min: 0, hint: "reached, agents hand back to a person; empty: none", aliases: ["budget"] },
    { key: "policyMode", label: "Mode", type: "select", options: [["default", "default"], ["auto_edit", "auto_edit"], ["yolo", "yolo (allow all but DENY rules)"]], aliases: ["mode"] },
    { key: "workingDir", label: "Working directory", aliases: ["working dir", "working_dir", "directory"] },
    { key: "streaming", label: "Stream answers token by token", type: "checkbox" },
    { key: "policyFiles", label: "Policy files", type: "lines", hint: "one path per line", aliases: ["policy", "toml"] },
    { key: "mcpConfig", label: "MCP servers", type: "json", rows: 6, placeholder: '{"mcpServers": {}}', aliases: ["mcp"] },
  ];
}

export function agentFields(creating) {
  return [
    creating ? { key: "name", label: "Name", required: true, hint: "the @mention handle", aliases: ["name"] } : null,
    { key: "provider", label: "Provider", type: "select", options: PROVIDERS.map((p) => [p, p]), aliases: ["provider"] },
    { key: "model", label: "Model", required: true, placeholder: "gpt-4o-mini", aliases: ["model"] },
    { key: "baseUrl", label: "Base URL", hint: "for OpenAI-compatible servers", placeholder: "http://127.0.0.1:11434/v1", aliases: ["base url", "base_url", "url"] },
    {
      key: "apiKeyEnv", label: "API key variable", hint: "the NAME of an environment variable, never the key",
      placeholder: "OPENAI_API_KEY", aliases: ["api key", "api_key", "env"],
      check: (v) => ENV_NAME.test(v) ? null : "give the name of an environment variable (like OPENAI_API_KEY), not a key",
    },
    { key: "temperature", label: "Temperature", type: "number", step: "0.1", min: 0, max: 2, aliases: ["temperature"] },
    { key: "maxTokens", label: "Max tokens", type: "number", min: 1, aliases: ["max tokens", "max_tokens"] },
    {
      key: "modelDeadlineSeconds", label: "Model deadline (s)", type: "number", min: 1, max: 86400,
      hint: "one model call, retries included", aliases: ["deadline", "timeout"],
    },
    { key: "priceIn", label: "Price in (USD / M tokens)", type: "number", step: "any", min: 0, hint: "empty: the shipped price table's", aliases: ["price in", "price_in"] },
    { key: "priceOut", label: "Price out (USD / M tokens)", type: "number", step: "any", min: 0, hint: "empty: the shipped price table's", aliases: ["price out", "price_out"] },
    { key: "budget", label: "Budget per chat (USD)", type: "number", step: "any", min: 0, hint: "this agent's calls in one chat; empty: none", aliases: ["budget"] },
    { key: "systemPrompt", label: "System prompt", type: "textarea", rows: 4, aliases: ["prompt"] },
  ].filter(Boolean);
}

/** Create (agent null) or edit an agent in a dialog; resolves with the saved agent or null. */
export function agentDialog(world, agent) {
  const creating = !agent;
  return modal((close) => {
    const values = agent ?? { provider: "openai" };
    const form = formOf(agentFields(creating), values, {
      testid: "agent-form",
      submitLabel: creating ? "Create agent" : "Save",
      extra: [h("button", { type: "button", testid: "agent-form-cancel", onClick: () => close(null) }, "Cancel")],
      onSubmit: async (out) => {
        if (creating) {
          const body = Object.fromEntries(Object.entries(out).filter(([, v]) => v !== null));
          close(await api.createAgent(world, body));
        } else {
          close(await api.updateAgent(world, agent.name, changes(out, agent)));
        }
      },
    });
    return [h("h2", {}, creating ? "New agent" : `Agent ${agent.name}`), form];
  }, { testid: "agent-dialog", label: creating ? "New agent" : "Edit agent" });
}
