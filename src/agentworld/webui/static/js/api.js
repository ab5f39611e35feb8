// The HTTP API of SPEC §3.1 (docs/api.md), same origin: the login cookie, when the server
// has a token, rides along with every request and with the event stream.

import { reportFetch } from "./offline.js";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function request(method, path, body, bodyType = "application/json") {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = bodyType;
    init.body = bodyType === "application/json" ? JSON.stringify(body) : body;
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    reportFetch(false);
    throw new ApiError(0, "network", `the server cannot be reached (${err.message})`);
  }
  reportFetch(![502, 503, 504].includes(response.status)); // a gateway answering for a server that is away
  if (response.status === 204) return null;
  const type = response.headers.get("content-type") || "";
  const data = type.includes("json") ? await response.json().catch(() => null) : await response.text();
  if (!response.ok) {
    const error = data && typeof data === "object" ? data.error : null;
    throw new ApiError(response.status, error?.code ?? "error", error?.message ?? `${response.status} ${response.statusText}`);
  }
  return data;
}

const enc = encodeURIComponent;
export const worldPath = (world) => `/api/worlds/${enc(world)}`;
export const chatPath = (world, chat) => `${worldPath(world)}/chats/${enc(chat)}`;

export const api = {
  worlds: () => request("GET", "/api/worlds"),
  world: (w) => request("GET", worldPath(w)),
  createWorld: (body) => request("POST", "/api/worlds", body),
  updateWorld: (w, body) => request("PATCH", worldPath(w), body),
  deleteWorld: (w) => request("DELETE", worldPath(w)),
  agents: (w) => request("GET", `${worldPath(w)}/agents`),
  agent: (w, a) => request("GET", `${worldPath(w)}/agents/${enc(a)}`),
  createAgent: (w, body) => request("POST", `${worldPath(w)}/agents`, body),
  updateAgent: (w, a, body) => request("PATCH", `${worldPath(w)}/agents/${enc(a)}`, body),
  deleteAgent: (w, a) => request("DELETE", `${worldPath(w)}/agents/${enc(a)}`),
  chats: (w) => request("GET", `${worldPath(w)}/chats`),
  newChat: (w) => request("POST", `${worldPath(w)}/chats`),
  changeChat: (w, c, body) => request("PATCH", chatPath(w, c), body),
  deleteChat: (w, c) => request("DELETE", chatPath(w, c)),
  messages: (w, c, after = 0, limit = 1000) => request("GET", `${chatPath(w, c)}/messages?after=${after}&limit=${limit}`),
  post: (w, c, text) => request("POST", `${chatPath(w, c)}/messages`, { text }),
  stop: (w, c) => request("POST", `${chatPath(w, c)}/stop`),
  branch: (w, c, messageId) => request("POST", `${chatPath(w, c)}/branch`, { messageId }),
  editMessage: (w, c, m, text) => request("PATCH", `${chatPath(w, c)}/messages/${enc(m)}`, { text }),
  deleteFrom: (w, c, m) => request("DELETE", `${chatPath(w, c)}/messages/${enc(m)}`),
  exportUrl: (w, c) => `${chatPath(w, c)}/export`,
  approvals: (w, chat) => request("GET", `${worldPath(w)}/approvals${chat == null ? "" : `?chat=${enc(chat)}`}`),
  answer: (w, id, decision, scope, args) => request("POST", `${worldPath(w)}/approvals/${enc(id)}`,
    args === undefined ? { decision, scope } : { decision, scope, args }),
  questions: (w, chat) => request("GET", `${worldPath(w)}/questions${chat == null ? "" : `?chat=${enc(chat)}`}`),
  answerQuestion: (w, id, answer) => request("POST", `${worldPath(w)}/questions/${enc(id)}`, { answer }),
  rules: (w) => request("GET", `${worldPath(w)}/policy/rules`),
  testPolicy: (w, body) => request("POST", `${worldPath(w)}/policy/test`, body),
  grants: (w) => request("GET", `${worldPath(w)}/grants`),
  revokeGrant: (w, id) => request("DELETE", `${worldPath(w)}/grants/${enc(id)}`),
  audit: (w) => request("GET", `${worldPath(w)}/audit`),
  worldExportUrl: (w) => `${worldPath(w)}/export`,
  applyWorldFile: (text, dryRun) => request("POST", `/api/worlds/apply?dryRun=${dryRun}`, text, "application/toml"),
  eventsUrl: (w, after) => `${worldPath(w)}/events${after == null ? "" : `?after=${after}`}`,
};

/** The whole transcript, page by page; `lastEventId` of the first page is where the event
 * stream must start so that nothing stored after the read is missed (docs/api.md). */
export async function wholeTranscript(world, chat) {
  const messages = [];
  let after = 0;
  let lastEventId = null;
  for (;;) {
    const page = await api.messages(world, chat, after, 1000);
    lastEventId ??= page.lastEventId;
    messages.push(...page.messages);
    if (page.messages.length < 1000 || page.nextAfter === after) break;
    after = page.nextAfter;
  }
  return { messages, lastEventId };
}
