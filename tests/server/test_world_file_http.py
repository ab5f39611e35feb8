"""A world as a file over HTTP: ``GET /api/worlds/{w}/export`` gives the file ``agentworld
export`` writes, and ``POST /api/worlds/apply`` plans and applies it as ``agentworld apply``
does — on the real server, over SQLite and PostgreSQL."""

from __future__ import annotations

import httpx
from http_harness import Served, refusal

TOML = {"Content-Type": "application/toml"}


def _world(api: httpx.Client, name: str) -> None:
    assert api.post("/api/worlds", json={"name": name, "description": "a pair", "turnLimit": 7}).status_code == 201
    for agent in ("writer", "critic"):
        body = {"name": agent, "provider": "openai", "model": "m", "baseUrl": "http://127.0.0.1:9/v1",
                "systemPrompt": f"You are the {agent}.\nSay \"hi\"."}
        assert api.post(f"/api/worlds/{name}/agents", json=body).status_code == 201
    assert api.patch(f"/api/worlds/{name}", json={"mainAgent": "writer"}).status_code == 200


def _apply(api: httpx.Client, text: str, *, dry_run: bool, prune: bool = False) -> httpx.Response:
    params = {"dryRun": str(dry_run).lower(), "prune": str(prune).lower()}
    return api.post("/api/worlds/apply", params=params, content=text.encode(), headers=TOML)


def test_an_exported_world_applied_under_another_name_exports_the_same_file(api: httpx.Client, world_name: str) -> None:
    _world(api, world_name)
    exported = api.get(f"/api/worlds/{world_name}/export")
    assert exported.status_code == 200
    assert exported.headers["content-type"].startswith("application/toml")
    assert f'filename="{world_name}.toml"' in exported.headers["content-disposition"]
    text = exported.text
    assert f'name = "{world_name}"' in text and "You are the critic." in text
    copy = f"{world_name}-copy"
    renamed = text.replace(f'name = "{world_name}"', f'name = "{copy}"', 1)

    planned = _apply(api, renamed, dry_run=True)
    assert planned.status_code == 200, planned.text
    doc = planned.json()
    assert set(doc) == {"world", "changes", "kept", "keptRules", "dryRun"}
    assert doc["world"] == copy and doc["dryRun"] is True and doc["kept"] == []
    assert [(c["action"], c["kind"], c["name"]) for c in doc["changes"]] == [
        ("create", "world", copy), ("create", "agent", "writer"), ("create", "agent", "critic"),
    ]
    assert "turnLimit" in doc["changes"][0]["fields"]
    assert api.get(f"/api/worlds/{copy}").status_code == 404  # a dry run changes nothing

    applied = _apply(api, renamed, dry_run=False)
    assert applied.status_code == 200 and applied.json()["dryRun"] is False
    assert api.get(f"/api/worlds/{copy}/export").text == renamed
    again = _apply(api, renamed, dry_run=False)
    assert again.json()["changes"] == []


def test_a_change_in_the_file_is_planned_and_prune_deletes_agents_the_file_lacks(
    api: httpx.Client, world_name: str
) -> None:
    _world(api, world_name)
    text = api.get(f"/api/worlds/{world_name}/export").text
    head, _, _critic = text.partition('[[agents]]\nname = "critic"')
    changed = head.rstrip() + "\n"
    changed = changed.replace("turnLimit = 7", "turnLimit = 9")
    kept = _apply(api, changed, dry_run=True)
    assert kept.status_code == 200, kept.text
    assert kept.json()["changes"] == [{"action": "update", "kind": "world", "name": world_name, "fields": ["turnLimit"]}]
    assert kept.json()["kept"] == ["critic"]
    pruned = _apply(api, changed, dry_run=False, prune=True)
    assert [(c["action"], c["name"]) for c in pruned.json()["changes"]] == [("update", world_name), ("delete", "critic")]
    assert [a["name"] for a in api.get(f"/api/worlds/{world_name}/agents").json()["agents"]] == ["writer"]
    assert api.get(f"/api/worlds/{world_name}").json()["turnLimit"] == 9


def test_a_bad_file_is_refused_naming_its_line_and_key(api: httpx.Client, world_name: str) -> None:
    text = f'[world]\nname = "{world_name}"\nturnLimit = 3\ncolour = "red"\n'
    status, code, message = refusal(_apply(api, text, dry_run=True))
    assert (status, code) == (422, "invalid_input")
    assert "world.toml:4: world.colour: unknown key" in message
    invalid = f'[world]\nname = "{world_name}"\nturnLimit = -1\n'
    status, code, message = refusal(_apply(api, invalid, dry_run=False))
    assert (status, code) == (422, "invalid_input") and ":3: world.turnLimit:" in message
    assert api.get(f"/api/worlds/{world_name}").status_code == 404


def test_a_file_over_http_may_not_name_files_relative_to_the_server(api: httpx.Client, world_name: str) -> None:
    prompt = f'[world]\nname = "{world_name}"\n\n[[agents]]\nname = "a"\nprovider = "echo"\nmodel = "e"\npromptFile = "/etc/passwd"\n'
    status, code, message = refusal(_apply(api, prompt, dry_run=True))
    assert (status, code) == (422, "invalid_input")
    assert "world.toml:8: agents[0].promptFile:" in message and "give systemPrompt" in message
    relative = f'[world]\nname = "{world_name}"\nworkingDir = "work"\n'
    status, code, message = refusal(_apply(api, relative, dry_run=True))
    assert status == 422 and "world.workingDir" in message and "relative" in message
    assert api.get(f"/api/worlds/{world_name}").status_code == 404


def test_a_world_file_from_another_site_is_refused(served: Served, api: httpx.Client, world_name: str) -> None:
    text = f'[world]\nname = "{world_name}"\n'.encode()
    port = served.base_url.rsplit(":", 1)[1]
    shapes = [
        {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Content-Type": "application/toml"},
        {"Origin": f"http://localhost:{port}", "Content-Type": "application/toml"},
        {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Content-Type": "text/plain"},
        {"Content-Type": "text/plain"},  # what a form or a no-cors fetch may send
    ]
    for headers in shapes:
        answer = httpx.post(f"{served.base_url}/api/worlds/apply", content=text, headers=headers)
        assert answer.status_code in (403, 415), (headers, answer.text)
        assert answer.json()["error"]["code"] in ("cross_site", "unsupported_media_type")
    assert api.get(f"/api/worlds/{world_name}").status_code == 404
    own = httpx.post(f"{served.base_url}/api/worlds/apply", content=text,
                     headers={"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin", **TOML})
    assert own.status_code == 200 and own.json()["changes"][0]["action"] == "create"


def test_an_unknown_world_cannot_be_exported(api: httpx.Client, world_name: str) -> None:
    status, code, _ = refusal(api.get(f"/api/worlds/{world_name}/export"))
    assert (status, code) == (404, "not_found")


def test_a_worlds_own_rules_are_set_over_http_and_decide_its_calls(api: httpx.Client, world_name: str) -> None:
    _world(api, world_name)
    rule = {"name": "no listing", "toolName": "list_files", "decision": "deny", "priority": 1}
    assert api.patch(f"/api/worlds/{world_name}", json={"policyRules": [rule]}).status_code == 200
    text = api.get(f"/api/worlds/{world_name}/export").text
    assert '[[rules]]\nname = "no listing"\ntoolName = "list_files"' in text
    assert _apply(api, text, dry_run=True).json()["changes"] == []
    decided = api.post(f"/api/worlds/{world_name}/policy/test", json={"tool": "list_files", "args": {}})
    assert decided.status_code == 200, decided.text
    assert decided.json()["decision"] == "DENY" and decided.json()["rule"]["source"] == "policyRules"
    bad = {**rule, "decision": "perhaps"}
    status, code, message = refusal(api.patch(f"/api/worlds/{world_name}", json={"policyRules": [bad]}))
    assert code == "invalid_input" and "rule 1" in message and "decision" in message
