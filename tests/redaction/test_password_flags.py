"""Short flags that carry a password are masked for the programs where they mean one
(``docker login -p X``, ``mysql -pX``, ``redis-cli -a X``), and the same letters stay readable
everywhere else (``mkdir -p``, ``ssh -p 22``, ``docker run -p 8080:80``): an approval must show
what runs, and a port or a directory is not a secret."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.redaction import find_secrets, redact, redact_text
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

SECRET = "S3cretPassw0rd"
R = "[REDACTED:password]"

MASKED = [
    ("docker login -p S3cretPassw0rd registry.example.com", f"docker login -p {R} registry.example.com"),
    ("docker login -u bob -pS3cretPassw0rd reg.io", f"docker login -u bob -p{R} reg.io"),
    ("sudo docker --config /etc/d login -u bob -p S3cretPassw0rd", f"sudo docker --config /etc/d login -u bob -p {R}"),
    ("/usr/bin/podman login -p 'S3cretPassw0rd' quay.io", f"/usr/bin/podman login -p '{R}' quay.io"),
    ("nerdctl login -u u -p S3cretPassw0rd r", f"nerdctl login -u u -p {R} r"),
    ("buildah login -p S3cretPassw0rd r", f"buildah login -p {R} r"),
    ("skopeo login -u u -p S3cretPassw0rd r", f"skopeo login -u u -p {R} r"),
    ("helm registry login r.io -u u -p S3cretPassw0rd", f"helm registry login r.io -u u -p {R}"),
    ("crane auth login r.io -u u -p S3cretPassw0rd", f"crane auth login r.io -u u -p {R}"),
    ("oras login r.io -u u -p S3cretPassw0rd", f"oras login r.io -u u -p {R}"),
    ("az acr login -n reg -u u -p S3cretPassw0rd", f"az acr login -n reg -u u -p {R}"),
    ("cf login -a https://api -u u -p S3cretPassw0rd", f"cf login -a https://api -u u -p {R}"),
    ("docker login -p S3cretPassw0rd r && docker push r/x", f"docker login -p {R} r && docker push r/x"),
    ("mysql -uroot -pS3cretPassw0rd app", f"mysql -uroot -p{R} app"),
    ("mysqlimport -u u -p S3cretPassw0rd db f.csv", f"mysqlimport -u u -p {R} db f.csv"),
    ("mongosh -u admin -p S3cretPassw0rd mongodb://h", f"mongosh -u admin -p {R} mongodb://h"),
    ("redis-cli -h cache -a S3cretPassw0rd ping", f"redis-cli -h cache -a {R} ping"),
    ("ldapsearch -x -D cn=admin -w S3cretPassw0rd -b dc=x", f"ldapsearch -x -D cn=admin -w {R} -b dc=x"),
    ("zip -P S3cretPassw0rd out.zip f", f"zip -P {R} out.zip f"),
    ("unzip -P S3cretPassw0rd in.zip", f"unzip -P {R} in.zip"),
    ("7z a -pS3cretPassw0rd out.7z dir", f"7z a -p{R} out.7z dir"),
    ("sqlcmd -S db -U sa -P S3cretPassw0rd -Q 'select 1'", f"sqlcmd -S db -U sa -P {R} -Q 'select 1'"),
    ("openssl enc -aes256 -pass pass:S3cretPassw0rd -in f", f"openssl enc -aes256 -pass pass:{R} -in f"),
    ("openssl pkcs12 -export -passout pass:S3cretPassw0rd -out k.p12", f"openssl pkcs12 -export -passout pass:{R} -out k.p12"),
    ("keytool -list -keystore k.jks -storepass S3cretPassw0rd", f"keytool -list -keystore k.jks -storepass {R}"),
    ("ssh host 'docker login -p S3cretPassw0rd r'", f"ssh host 'docker login -p {R} r'"),
]

READABLE = [
    "mkdir -p build/out",
    "ssh -p 2222 deploy@host",
    "scp -P 2222 f host:",
    "cp -p a b",
    "git log -p -3",
    "docker run -p 8080:80 -u 1000:1000 nginx",
    "docker run --name login -p 8080:80 nginx",
    "podman run -p 5432:5432 postgres",
    "docker login && docker run -p 80:80 x",
    "docker login -p \"$(cat pw.txt)\" r",
    "docker login --password-stdin -u bob r",
    "helm install -p x ./chart",
    "az vm create -p x",
    "7z a -p out.7z dir",
    "openssl enc -aes256 -pass env:PW -in f",
    "openssl enc -aes256 -pass file:pw.txt -in f",
    "unzip -l in.zip",
    "ps -p 1234",
    "psql -h db -p 5432 app",
    "redis-cli -h cache ping",
]


@pytest.mark.parametrize(("text", "expected"), MASKED)
def test_a_password_flag_of_a_program_that_takes_one_is_masked(text: str, expected: str) -> None:
    assert redact_text(text) == expected
    assert redact_text(expected) == expected


@pytest.mark.parametrize("text", READABLE)
def test_the_same_letters_stay_readable_where_they_are_no_password(text: str) -> None:
    assert redact_text(text) == text
    assert find_secrets(text) == []


@pytest.mark.parametrize(
    ("arguments", "parameters"),
    [
        ({"command": "docker", "parameters": ["login", "-p", SECRET, "r"]}, ["login", "-p", R, "r"]),
        ({"command": "docker login -u bob", "parameters": ["-p", SECRET]}, ["-p", R]),
        ({"command": "cd db && mysql -uroot", "parameters": [f"-p{SECRET}"]}, [f"-p{R}"]),
        ({"command": "docker", "parameters": ["run", "-p", "8080:80", "x"]}, ["run", "-p", "8080:80", "x"]),
        ({"command": "mkdir", "parameters": ["-p", "dir"]}, ["-p", "dir"]),
    ],
)
def test_shell_parameters_are_read_after_the_command_they_continue(
    arguments: dict[str, Any], parameters: list[str]
) -> None:
    assert redact(arguments) == {"command": arguments["command"], "parameters": parameters}


@pytest.mark.parametrize(
    "arguments",
    [
        {"command": f"docker login -u bob -p {SECRET} registry.example.com"},
        {"command": "podman", "parameters": ["login", "-u", "bob", "-p", SECRET, "quay.io"]},
    ],
)
async def test_a_registry_login_password_is_masked_in_the_approval_the_audit_and_the_events(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path,
    arguments: dict[str, Any],
) -> None:
    await make_world("a1", working_dir=str(tmp_path))
    script.by_agent["a1"] = lambda _body: Reply.tools(
        ToolCallSpec(name="shell_cmd", arguments=json.dumps(arguments), id="call_login")
    )

    result = await aw.send("w", "@a1 log in to the registry")

    (approval,) = result.pending_approvals
    shown = json.dumps(
        {
            # The pending row keeps the model's own arguments (they are what runs once
            # approved); everything a person or a log is shown is masked.
            "approval": approval.model_dump(mode="json", exclude={"arguments"}),
            "audit": [entry.tool_args for entry in await aw.audit_log("w")],
            "events": [e for e in await aw.storage.list_events("w") if e["kind"] != "message"],
        }
    )
    assert SECRET not in shown
    assert approval.shell is not None and "-p [REDACTED:password]" in approval.shell.command_line
    assert "login" in approval.message
