// The page: a hash router over three kinds of screen — the worlds, one world's chats (with
// its agents), its settings, its policy — and the shell around them (tabs, the approvals
// badge, the connection indicator). Routes: #/ · #/w/NAME · #/w/NAME/c/CHAT ·
// #/w/NAME/settings · #/w/NAME/policy.

import { api } from "./api.js";
import { confirmDialog, h, replace, toast } from "./dom.js";
import { installDrawer } from "./drawer.js";
import { agentDialog, changes, formOf, WORLD_CREATE_FIELDS, worldSettingsFields } from "./forms.js";
import { installOffline } from "./offline.js";
import { policyPage } from "./policy.js";
import { WorldSession } from "./world.js";
import { worldFileSection } from "./world_file.js";

const main = document.getElementById("main");
const shell = {
  title: document.querySelector("[data-testid=world-title]"),
  tabs: document.querySelector("[data-testid=world-tabs]"),
  badge: document.querySelector("[data-testid=approvals-badge]"),
  count: document.querySelector("[data-testid=approvals-count]"),
  connection: document.querySelector("[data-testid=connection]"),
  announcer: document.querySelector("[data-testid=approval-announcer]"),
  menu: document.querySelector("[data-testid=menu-toggle]"),
  navigate,
};
let session = null;
let shown = null; // the route on screen: "world|view|chat"

function parse(hash) {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] !== "w" || !parts[1]) return { view: "worlds" };
  const world = parts[1];
  if (parts[2] === "settings" || parts[2] === "policy") return { view: parts[2], world };
  return { view: "chat", world, chat: parts[2] === "c" ? parts[3] ?? null : null };
}

/** Go to `hash` and resolve once the screen is shown. */
export async function navigate(hash, { force = false } = {}) {
  if (force) shown = null;
  if (location.hash !== hash) history.pushState(null, "", hash);
  await route();
}

async function route() {
  const target = parse(location.hash);
  const key = `${target.world ?? ""}|${target.view}|${target.chat ?? ""}`;
  if (key === shown) return;
  shown = key;
  try {
    await show(target);
  } catch (err) {
    shown = null;
    if (err.status === 404) {
      toast(err.message, { error: true });
      history.replaceState(null, "", "#/");
      return route();
    }
    replace(main, h("div", { class: "page" }, h("p", { class: "error-text", role: "alert", testid: "page-error" }, err.message)));
  }
}

async function show(target) {
  if (session && session.name !== target.world) {
    session.destroy();
    session = null;
  }
  shell.tabs.hidden = !target.world;
  shell.title.textContent = target.world ?? "";
  shell.menu.dataset.active = String(target.view === "chat");
  shell.menu.hidden = target.view !== "chat";
  document.title = target.world ? `${target.world} · Agent World` : "Agent World";
  for (const tab of shell.tabs.querySelectorAll("a")) {
    const base = `#/w/${encodeURIComponent(target.world ?? "")}`;
    tab.href = tab.dataset.tab === "chat" ? base : `${base}/${tab.dataset.tab}`;
    tab.setAttribute("aria-current", tab.dataset.tab === target.view ? "page" : "false");
  }
  if (target.view === "worlds") return worldsPage();
  if (!session) {
    session = new WorldSession(target.world, shell);
    await session.start(target.chat);
  }
  session.view = target.view;
  session.onView = null;
  if (target.view === "chat") {
    if (target.chat && !session.chats.some((c) => c.chatId === target.chat)) await session.loadChats();
    await session.showChat(main, target.chat);
  } else {
    session.firstTranscript = null; // events go on; the chat is read again when shown
    session.chatView = null;
    session.composer = null;
    session.strip = session.chatList = session.head = session.sidebar = session.approvalSlot = null;
    if (target.view === "settings") await settingsPage(session);
    else session.onView = await policyPage(session.name, main);
  }
  main.focus({ preventScroll: true });
}

// -- worlds -------------------------------------------------------------------------------------

async function worldsPage() {
  const { worlds } = await api.worlds();
  const form = formOf(WORLD_CREATE_FIELDS, {}, {
    testid: "world-create-form",
    submitLabel: "Create world",
    onSubmit: async (out) => {
      const body = Object.fromEntries(Object.entries(out).filter(([, v]) => v !== null && v !== ""));
      const world = await api.createWorld(body);
      toast(`World ${world.name} created.`);
      await navigate(`#/w/${encodeURIComponent(world.name)}`);
    },
  });
  const list = worlds.length
    ? h("ul", { class: "world-list", testid: "world-list" }, worlds.map((w) => h("li", { testid: "world-item", dataset: { world: w.name } },
      h("a", { href: `#/w/${encodeURIComponent(w.name)}` }, w.name),
      h("span", { class: "muted" }, w.description || ""),
      h("span", { class: "spacer" }),
      h("a", { href: `#/w/${encodeURIComponent(w.name)}/settings`, "aria-label": `Settings of ${w.name}` }, "Settings"))))
    : h("p", { class: "muted", testid: "world-list-empty" }, "No worlds yet: create the first one.");
  replace(main, h("div", { class: "page", testid: "worlds-page" },
    h("section", { class: "card" }, h("h2", {}, "Worlds"), list),
    h("section", { class: "card" }, h("h2", {}, "New world"), form)));
}

// -- world settings -------------------------------------------------------------------------------

async function settingsPage(s) {
  const [world, { agents }] = await Promise.all([api.world(s.name), api.agents(s.name)]);
  s.world = world;
  const form = formOf(worldSettingsFields(agents), world, {
    testid: "world-settings-form",
    submitLabel: "Save settings",
    onSubmit: async (out) => {
      const diff = changes(out, world);
      if (!Object.keys(diff).length) return toast("Nothing changed.");
      Object.assign(world, await api.updateWorld(s.name, diff));
      s.world = world;
      toast("Settings saved.");
    },
  });
  const agentRows = agents.map((a) => h("tr", { testid: "agent-row", dataset: { agent: a.name } },
    h("td", {}, h("strong", {}, a.name)), h("td", {}, `${a.provider} · ${a.model}`), h("td", {}, a.apiKeyEnv ?? ""),
    h("td", {}, h("div", { class: "row" },
      h("button", { type: "button", testid: "agent-row-edit", onClick: async () => { if (await agentDialog(s.name, a)) refresh(); } }, "Edit"),
      h("button", { type: "button", class: "danger", testid: "agent-row-delete", onClick: async () => {
        if (!(await confirmDialog(`Delete agent ${a.name}? Its pending approvals are cancelled.`))) return;
        try {
          await api.deleteAgent(s.name, a.name);
          refresh();
        } catch (err) {
          toast(err.message, { error: true });
        }
      } }, "Delete")))));
  const refresh = () => { settingsPage(s).catch((err) => toast(err.message, { error: true })); };
  replace(main, h("div", { class: "page", testid: "settings-page" },
    h("section", { class: "card" }, h("h2", {}, `Settings of ${s.name}`), form),
    h("section", { class: "card" }, h("h2", {}, "Agents"),
      agents.length ? h("div", { class: "table-wrap" }, h("table", { testid: "agents-table" },
        h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Model"), h("th", {}, "Key variable"), h("th", {}, ""))),
        h("tbody", {}, agentRows))) : h("p", { class: "muted" }, "No agents yet."),
      h("div", { class: "actions" }, h("button", { type: "button", class: "primary", testid: "settings-agent-add", onClick: async () => { if (await agentDialog(s.name, null)) refresh(); } }, "+ Agent"))),
    worldFileSection(s.name, refresh),
    h("section", { class: "card" }, h("h2", {}, "Delete this world"),
      h("p", { class: "muted" }, "Deletes its agents, chats, messages and settings."),
      h("button", { type: "button", class: "danger", testid: "world-delete", onClick: async () => {
        if (!(await confirmDialog(`Delete world ${s.name} with all its chats and agents?`, { action: "Delete world" }))) return;
        try {
          await api.deleteWorld(s.name);
          toast(`World ${s.name} deleted.`);
          await navigate("#/");
        } catch (err) {
          toast(err.message, { error: true });
        }
      } }, "Delete world"))));
}

// -- start -----------------------------------------------------------------------------------

installDrawer(shell.menu);
installOffline(document.querySelector("[data-testid=offline-banner]"), shell.connection);
window.addEventListener("popstate", route);
window.addEventListener("hashchange", route);
route();
