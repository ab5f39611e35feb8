"""Redaction masks secret values in place and never hides or rewrites shell syntax."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentworld.redaction import (
    REDACTED,
    SecretSpan,
    find_secrets,
    is_secret_key,
    mask,
    redact,
    redact_text,
    secret_env_values,
)

OPENAI = "sk-proj-4fJ9kQ2mXv8LwP0zR7tYb1NcHd6EaG3s"
ANTHROPIC = "sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz"
GHP = "ghp_1A2b3C4d5E6f7G8h9I0jK1l2M3n4O5p6Q7r8"
GITHUB_PAT = "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRST"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_TEMP_ID = "ASIAY34FZKBOKMUTVV7A"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GOOGLE = "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
STRIPE = "sk_live_51H8xYzAbCdEfGhIjKlMnOpQr"
STRIPE_RESTRICTED = "rk_live_51H8xYzAbCdEfGhIjKlMnOpQr"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
NPM = "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
GLPAT = "glpat-xY9zA8bC7dE6fG5hI4jK"
PEM_LINE_1 = "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi4+5pS2lFzFyqD0aX1z7X1kP4Q"
PEM_LINE_2 = "b8Kd0Xw5ZbXo3y2Yq9Tq7Vd1hRk+QmR3sYxk/Ge4u0Jh2w=="

CASES = [
    # Provider keys and tokens, recognised by their shape.
    (f"export OPENAI_API_KEY={OPENAI}", "export OPENAI_API_KEY=[REDACTED:api_key]"),
    (
        f'curl https://api.anthropic.com/v1/messages -H "x-api-key: {ANTHROPIC}"',
        'curl https://api.anthropic.com/v1/messages -H "x-api-key: [REDACTED:api_key]"',
    ),
    (
        f'client = OpenAI(api_key="{OPENAI}")',
        'client = OpenAI(api_key="[REDACTED:api_key]")',
    ),
    (
        f"git clone https://x-access-token:{GHP}@github.com/acme/app.git",
        "git clone https://x-access-token:[REDACTED:token]@github.com/acme/app.git",
    ),
    (
        f"echo {GITHUB_PAT} | gh auth login --with-token",
        "echo [REDACTED:token] | gh auth login --with-token",
    ),
    (f"notify --channel ops {SLACK}", "notify --channel ops [REDACTED:token]"),
    (
        f"aws configure set aws_access_key_id {AWS_ID}",
        "aws configure set aws_access_key_id [REDACTED:aws_key]",
    ),
    (f'{{"AccessKeyId": "{AWS_TEMP_ID}"}}', '{"AccessKeyId": "[REDACTED:aws_key]"}'),
    (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", "AWS_SECRET_ACCESS_KEY=[REDACTED:api_key]"),
    (
        f'curl "https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key={GOOGLE}"',
        'curl "https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key=[REDACTED:api_key]"',
    ),
    (
        f"curl https://api.stripe.com/v1/charges -u {STRIPE}:",
        "curl https://api.stripe.com/v1/charges -u [REDACTED:api_key]:",
    ),
    (f"STRIPE_RESTRICTED={STRIPE_RESTRICTED}", "STRIPE_RESTRICTED=[REDACTED:api_key]"),
    (f"id_token {JWT} expires in 3600", "id_token [REDACTED:jwt] expires in 3600"),
    (
        f"//registry.npmjs.org/:_authToken={NPM}",
        "//registry.npmjs.org/:_authToken=[REDACTED:token]",
    ),
    (f"huggingface-cli login --token {HF}", "huggingface-cli login --token [REDACTED:token]"),
    (
        f"git remote add origin https://oauth2:{GLPAT}@gitlab.com/g/p.git",
        "git remote add origin https://oauth2:[REDACTED:token]@gitlab.com/g/p.git",
    ),
    # Passwords in URLs.
    (
        "psql postgresql://app:s3cr3tPass@db.internal:5432/app -c 'select 1'",
        "psql postgresql://app:[REDACTED:url_password]@db.internal:5432/app -c 'select 1'",
    ),
    # Authorization headers.
    (
        'curl -H "Authorization: Basic dXNlcjpodW50ZXIy" https://x.test',
        'curl -H "Authorization: Basic [REDACTED:basic_auth]" https://x.test',
    ),
    (
        "curl -H 'Authorization: Bearer abc123def456ghi789' https://x.test",
        "curl -H 'Authorization: Bearer [REDACTED:bearer]' https://x.test",
    ),
    (f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED:jwt]"),
    (
        f'curl -H "Authorization: token {GHP}" https://api.github.com/user',
        'curl -H "Authorization: token [REDACTED:token]" https://api.github.com/user',
    ),
    # The mysql family's -p, and sshpass -p.
    ("mysql -h db -u root -pS3cret! appdb", "mysql -h db -u root -p[REDACTED:password] appdb"),
    (
        "mysqldump -u root -p hunter2 shop > dump.sql",
        "mysqldump -u root -p [REDACTED:password] shop > dump.sql",
    ),
    (
        "mariadb -uadmin -p'Tr0ub4dor' -e 'show databases'",
        "mariadb -uadmin -p'[REDACTED:password]' -e 'show databases'",
    ),
    ("/usr/bin/mysql -phunter2 < init.sql", "/usr/bin/mysql -p[REDACTED:password] < init.sql"),
    (
        "mysql -uroot -phunter2 app 2>&1 | tee log",
        "mysql -uroot -p[REDACTED:password] app 2>&1 | tee log",
    ),
    ("ssh -p 2222 db mysql -uroot -phunter2", "ssh -p 2222 db mysql -uroot -p[REDACTED:password]"),
    ("ssh db 'mysql -uroot -phunter2 app'", "ssh db 'mysql -uroot -p[REDACTED:password] app'"),
    ("sshpass -p 'hunter2' ssh deploy@host", "sshpass -p '[REDACTED:password]' ssh deploy@host"),
    # Long flags, with the value as the next word or after "=".
    (
        "mysqladmin --user=root --password=hunter2 status",
        "mysqladmin --user=root --password=[REDACTED:password] status",
    ),
    (
        "wget --user=bob --password hunter2 https://x.test/f",
        "wget --user=bob --password [REDACTED:password] https://x.test/f",
    ),
    (
        "deploy --api-key k3y-4bc-123 --region eu-west-1",
        "deploy --api-key [REDACTED:api_key] --region eu-west-1",
    ),
    (
        "vault login --token s.Xy12Ab34 && vault kv get x",
        "vault login --token [REDACTED:token] && vault kv get x",
    ),
    ("tool --secret 's3cr3t' --verbose", "tool --secret '[REDACTED:secret]' --verbose"),
    # curl's -u/--user and -b/--cookie.
    ("curl -u deploy:hunter2 https://x.test", "curl -u deploy:[REDACTED:password] https://x.test"),
    (
        "curl --user deploy:hunter2 https://x.test",
        "curl --user deploy:[REDACTED:password] https://x.test",
    ),
    ("curl -udeploy:hunter2 https://x.test", "curl -udeploy:[REDACTED:password] https://x.test"),
    (
        'bash -c "curl -u bob:hunter2 https://x.test"',
        'bash -c "curl -u bob:[REDACTED:password] https://x.test"',
    ),
    (
        "curl -b 'theme=dark; sid=abc123' https://x.test",
        "curl -b 'theme=[REDACTED:cookie]; sid=[REDACTED:cookie]' https://x.test",
    ),
    (
        'curl --cookie "sid=abc123" https://x.test',
        'curl --cookie "sid=[REDACTED:cookie]" https://x.test',
    ),
    # Cookie headers.
    (
        "curl -H 'Cookie: session=abc123; theme=dark' https://x.test",
        "curl -H 'Cookie: session=[REDACTED:cookie]; theme=[REDACTED:cookie]' https://x.test",
    ),
    (
        "Set-Cookie: sid=31d4d96e407aad42; Path=/; Secure; HttpOnly",
        "Set-Cookie: sid=[REDACTED:cookie]; Path=/; Secure; HttpOnly",
    ),
    # key=value and key: value pairs: bodies, env dumps, config files.
    (
        """curl -X POST -d '{"username":"bob","password":"hunter2"}' https://x.test/login""",
        """curl -X POST -d '{"username":"bob","password":"[REDACTED:password]"}' https://x.test/login""",
    ),
    (
        "curl -d 'username=bob&password=hunter2' https://x.test/login",
        "curl -d 'username=bob&password=[REDACTED:password]' https://x.test/login",
    ),
    (
        "PGPASSWORD=hunter2\nHOME=/home/bob\nDB_PASS=swordfish\nPWD=/srv/app",
        "PGPASSWORD=[REDACTED:password]\nHOME=/home/bob\nDB_PASS=[REDACTED:password]\nPWD=/srv/app",
    ),
    (
        "database:\n  user: app\n  password: hunter2\n  port: 5432",
        "database:\n  user: app\n  password: [REDACTED:password]\n  port: 5432",
    ),
    ("export PASSWORD=hunter2; touch x", "export PASSWORD=[REDACTED:password]; touch x"),
    ('echo "token: abc123" >> notes.txt', 'echo "token: [REDACTED:token]" >> notes.txt'),
    (
        '{"config": "{\\"client_secret\\":\\"Zm9vYmFy\\"}"}',
        '{"config": "{\\"client_secret\\":\\"[REDACTED:secret]\\"}"}',
    ),
    # Private keys: only the base64 body lines, never what lies between the markers.
    (
        f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_LINE_1}\n{PEM_LINE_2}\n-----END RSA PRIVATE KEY-----\n",
        "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED:private_key]\n[REDACTED:private_key]\n"
        "-----END RSA PRIVATE KEY-----\n",
    ),
    (
        f'{{"private_key": "-----BEGIN PRIVATE KEY-----\\n{PEM_LINE_1}\\n-----END PRIVATE KEY-----\\n"}}',
        '{"private_key": "-----BEGIN PRIVATE KEY-----\\n[REDACTED:private_key]\\n-----END PRIVATE KEY-----\\n"}',
    ),
    (
        f"cat > id_rsa <<'EOF'\n-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_LINE_1}\n"
        "-----END OPENSSH PRIVATE KEY-----\nEOF\nchmod 600 id_rsa",
        "cat > id_rsa <<'EOF'\n-----BEGIN OPENSSH PRIVATE KEY-----\n[REDACTED:private_key]\n"
        "-----END OPENSSH PRIVATE KEY-----\nEOF\nchmod 600 id_rsa",
    ),
]

UNCHANGED = [
    "mkdir -p build",
    "mysql -uroot -p < dump.sql",
    "mysql -uroot -p 2>&1 | tee log",
    'password=abc"def"',
    "ssh -p 2222 host",
    "echo password=$(cat f)",
    "password=`id`",
    "password=abc$(id)",
    "git log --oneline",
    "the tokenizer maps each keyboard key to a token id",
    "python train.py --max_tokens 512 --tokenizer bert --token-file t.txt",
    'export PASSWORD="$(pass show db)"',
    'curl -H "Authorization: Bearer $TOKEN" https://x.test',
    'mysql -p"$DB_PASS" app',
    "echo ${password:-changeme}",
    "docker login --password-stdin -u bob registry.example.com",
    "docker run -p 8080:80 -u 1000:1000 nginx",
    "curl -b cookies.txt https://x.test",
    '{"token_type": "bearer", "expires_in": 3600, "nextPageToken": "CAoQAA"}',
    "if password == expected: pass",
    "echo '-----BEGIN RSA PRIVATE KEY-----'; touch R; echo '-----END RSA PRIVATE KEY-----'",
    "-----BEGIN PRIVATE KEY-----\nrm -rf /home/user/importantdirectory\n-----END PRIVATE KEY-----",
    "",
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_redact_text_masks_the_secret_value_in_place(text: str, expected: str) -> None:
    assert redact_text(text) == expected


@pytest.mark.parametrize("text", UNCHANGED)
def test_redact_text_leaves_code_and_ordinary_words_alone(text: str) -> None:
    assert redact_text(text) == text
    assert find_secrets(text) == []


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_redacting_twice_changes_nothing_more(text: str, expected: str) -> None:
    assert redact_text(expected) == expected


def test_an_approval_prompt_shows_the_command_that_runs_between_private_key_markers() -> None:
    command = "echo '-----BEGIN RSA PRIVATE KEY-----'; touch R; echo '-----END RSA PRIVATE KEY-----'"
    shown = redact({"command": command})["command"]
    assert "touch R" in shown and shown.count("'") == 4 and shown.count(";") == 2


def test_a_command_substitution_next_to_a_password_key_stays_visible_verbatim() -> None:
    assert "$(cat f)" in redact_text("mysql --password=$(cat f) -e 'select 1'")
    assert "$(cat f)" in redact_text("echo password=$(cat f)")


# --- properties -------------------------------------------------------------------------------

SHELL_SYNTAX = set(" \t\n\r'\"$`\\;&|()<>{}#*?[]")
FRAGMENTS = [
    "password=", "--password ", "-p", "mysql ", "curl ", "-u ", "-b ", "user:pw", "a=b; ", "token: ",
    "'", '"', "$(", ")", "`", ";", " ", "\n", "\\", "\\n", "=", "{", "}", "#", "*", "&", "|", ":",
    "Authorization: Bearer ", "Basic ", "Cookie: ", "Set-Cookie: ", "https://u:", "@host",
    "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", PEM_LINE_1, OPENAI, JWT,
    "hunter2", "abcdefghijklmnopqrstuvwxyz0123", '{"password":', "ssh db '", "$HOME",
]
texts = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=25
).map("".join)


def assert_masked_outside_unchanged(text: str, spans: list[SecretSpan], out: str) -> None:
    at = 0
    previous = 0
    for span in spans:
        kept = text[previous : span.start]
        assert out[at : at + len(kept)] == kept
        at += len(kept)
        token = f"[REDACTED:{span.kind}]"
        assert out[at : at + len(token)] == token
        at += len(token)
        previous = span.end
    assert out[at:] == text[previous:]


@settings(max_examples=400, deadline=None)
@given(texts)
def test_no_span_contains_shell_syntax_and_spans_never_overlap(text: str) -> None:
    spans = find_secrets(text)
    for span in spans:
        value = text[span.start : span.end]
        assert value and not SHELL_SYNTAX & set(value), (text, span)
        assert not value.startswith("=")
        assert not any(ord(c) < 32 for c in value)
    for before, after in zip(spans, spans[1:], strict=False):
        assert before.end <= after.start
    assert_masked_outside_unchanged(text, spans, mask(text, spans))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.data())
def test_mask_changes_nothing_outside_the_spans(text: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8)))
    spans = [SecretSpan(a, b, "x") for a, b in zip(cuts[::2], cuts[1::2], strict=False) if a < b]
    assert_masked_outside_unchanged(text, spans, mask(text, spans))


def test_mask_refuses_overlapping_spans() -> None:
    with pytest.raises(ValueError):
        mask("abcdef", [SecretSpan(0, 3, "x"), SecretSpan(2, 4, "y")])


DENSE_COMMAND = "mysql -uroot -psecret db | curl -u a:b -H 'Authorization: Bearer abcdefgh12345678' x\n"


def test_find_secrets_stays_fast_on_large_and_hostile_texts() -> None:
    hostile = [
        "a" * 10_000,
        "a." * 5_000,
        "a='" * 3_300,
        'a="\\' * 2_500,
        "://a:" * 2_000,
        "-----BEGIN PRIVATE KEY-----" * 370,
        "password=x " * 900,
        "x" * 9_990 + "password=x",
        "--a" * 3_333,
        "-" * 10_000,
        "tokentoken=" * 900,
        "$(" * 5_000,
        "id=" * 3_333,
        (DENSE_COMMAND * 120)[:10_000],
    ]
    for text in hostile:
        started = time.process_time()
        find_secrets(text)
        assert time.process_time() - started < 0.1, text[:40]


# --- known values and the environment ---------------------------------------------------------


def test_known_values_are_masked_wherever_they_appear_under_their_name() -> None:
    known = {"OPENAI_API_KEY": "plain-looking-value-42", "SHORT": "abc"}
    text = "key plain-looking-value-42 and again:plain-looking-value-42, abc"
    out = redact_text(text, known=known)
    assert out == "key [REDACTED:OPENAI_API_KEY] and again:[REDACTED:OPENAI_API_KEY], abc"


def test_a_known_value_with_shell_syntax_in_it_is_masked_around_that_syntax() -> None:
    known = {"DB_PASSWORD": "pa$$ word!x"}
    assert redact_text("login pa$$ word!x", known=known) == (
        "login [REDACTED:DB_PASSWORD]$$ [REDACTED:DB_PASSWORD]"
    )
    assert redact_text("x==Zm9vYmFy", known={"B64": "==Zm9vYmFy"}) == "x==[REDACTED:B64]"


def test_secret_env_values_picks_secret_names_with_long_enough_values() -> None:
    environ = {
        "OPENAI_API_KEY": OPENAI,
        "GITHUB_TOKEN": GHP,
        "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
        "STRIPE_KEY": STRIPE,
        "DB_PASSWORD": "hunter2",
        "MYSQL_PWD": "swordfish",
        "SERVICE_CREDENTIALS": "c2VjcmV0",
        "MY_TOKEN": "short",
        "HOME": "/home/bob",
        "PWD": "/srv/app",
        "PATH": "/usr/bin",
        "TOKENIZERS_PARALLELISM": "false",
    }
    assert secret_env_values(environ) == {
        "OPENAI_API_KEY": OPENAI,
        "GITHUB_TOKEN": GHP,
        "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
        "STRIPE_KEY": STRIPE,
        "DB_PASSWORD": "hunter2",
        "MYSQL_PWD": "swordfish",
        "SERVICE_CREDENTIALS": "c2VjcmV0",
    }


def test_tool_output_is_scrubbed_of_the_environment_secrets() -> None:
    known = secret_env_values({"ANTHROPIC_API_KEY": "k-9f8e7d6c5b4a", "HOME": "/home/bob"})
    assert redact("HOME=/home/bob key=k-9f8e7d6c5b4a", known=known) == (
        "HOME=/home/bob key=[REDACTED:ANTHROPIC_API_KEY]"
    )


# --- JSON-like data -----------------------------------------------------------------------------


def test_redact_masks_values_under_secret_keys_at_any_depth_and_keeps_keys() -> None:
    data = {
        "command": "mysql -uroot -phunter2 app",
        "headers": {"Authorization": "Bearer abc", "X-Api-Key": "k1", "Accept": "text/html"},
        "auth": [{"password": 123456, "PASSWORD": "x", "token": "", "user": "bob"}],
        "max_tokens": 512,
        "token_type": "bearer",
        "has_secret": True,
        "private_key": None,
        "client_secret": {"value": f"say {OPENAI}"},
        3: "three",
    }
    assert redact(data) == {
        "command": "mysql -uroot -p[REDACTED:password] app",
        "headers": {
            "Authorization": "[REDACTED:authorization]",
            "X-Api-Key": "[REDACTED:api_key]",
            "Accept": "text/html",
        },
        "auth": [
            {"password": "[REDACTED:password]", "PASSWORD": "[REDACTED:password]", "token": "", "user": "bob"}
        ],
        "max_tokens": 512,
        "token_type": "bearer",
        "has_secret": True,
        "private_key": None,
        "client_secret": {"value": "say [REDACTED:api_key]"},
        3: "three",
    }


def test_redact_reads_a_list_of_parameters_as_the_words_of_a_command() -> None:
    parameters = ["--token", "abc123", "--api-key=k-42", "--secret", "s3cr3t", "--region", "eu"]
    assert redact({"command": "deploy", "parameters": parameters}) == {
        "command": "deploy",
        "parameters": [
            "--token", "[REDACTED:token]", "--api-key=[REDACTED:api_key]",
            "--secret", "[REDACTED:secret]", "--region", "eu",
        ],
    }


def test_redact_leaves_a_parameter_that_is_code_visible() -> None:
    parameters = ["--password", "$(cat /etc/pw)", "-v"]
    assert redact(parameters) == parameters


def test_redact_copies_and_does_not_touch_the_original() -> None:
    original = {"password": "hunter2", "items": ("a", {"token": "t0k3n"})}
    copy = redact(original, known={"X": "never-appears"})
    assert copy == {
        "password": "[REDACTED:password]",
        "items": ["a", {"token": "[REDACTED:token]"}],
    }
    assert original == {"password": "hunter2", "items": ("a", {"token": "t0k3n"})}


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("api_key", True), ("apiKey", True), ("X-API-KEY", True), ("password", True),
        ("db_passwd", True), ("Authorization", True), ("cookie", True), ("client_secret", True),
        ("private_key", True), ("refresh_token", True), ("csrftoken", True),
        ("aws_secret_access_key", True),
        ("sessionId", True), ("STRIPE_KEY", True), ("MYSQL_PWD", True),
        ("max_tokens", False), ("tokenizer", False), ("token_type", False), ("keyboard", False),
        ("sort_key", False), ("password_file", False), ("nextPageToken", False), ("PWD", False),
    ],
)
def test_is_secret_key(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_masks_name_their_kind_and_the_old_constant_remains() -> None:
    assert REDACTED == "[REDACTED]"
    assert re.fullmatch(r"password=\[REDACTED:password\]", redact_text("password=hunter2"))
