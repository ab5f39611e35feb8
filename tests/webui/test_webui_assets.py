"""The UI's files as shipped (no browser): served with their security headers, every module an
ES module imports is there, and no script turns a string into markup."""

from __future__ import annotations

import re

from fastapi import FastAPI
from fastapi.testclient import TestClient

from agentworld.webui import CONTENT_SECURITY_POLICY, STATIC_DIR, mount_ui

IMPORT = re.compile(r"""^import .* from "(\./[\w.-]+\.js)";$""", re.MULTILINE)


def test_the_page_and_its_assets_are_served_with_a_strict_policy() -> None:
    app = FastAPI()
    mount_ui(app)
    mount_ui(app)  # twice is once
    with TestClient(app) as client:
        page = client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert "script-src 'self'" in CONTENT_SECURITY_POLICY and "unsafe-inline" not in CONTENT_SECURITY_POLICY
        script = client.get("/ui/js/app.js")
        assert script.status_code == 200 and "javascript" in script.headers["content-type"]
        assert script.headers["x-content-type-options"] == "nosniff"
        assert client.get("/ui/js/missing.js").status_code == 404
    assert [r for r in app.openapi()["paths"]] == []  # not part of the API contract


def test_every_imported_module_ships_and_nothing_assigns_html() -> None:
    modules = sorted((STATIC_DIR / "js").glob("*.js"))
    assert modules
    for module in modules:
        source = module.read_text()
        for target in IMPORT.findall(source):
            assert (module.parent / target).is_file(), f"{module.name} imports {target}"
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in source, f"{module.name} uses {sink}"
    assert "<script type=\"module\" src=\"/ui/js/app.js\"></script>" in (STATIC_DIR / "index.html").read_text()
