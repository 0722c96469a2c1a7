"""No API key or auth header ever reaches the cache, logs, results tables or notebooks.

A canary key is put in the environment and a full run (``lrlib run`` and ``lrlib inject``
with LineRetriever) goes against a local server that checks it receives the key; then every
file written, everything printed and everything logged is scanned for it. The server then
answers 401 quoting the key back, as some endpoints do: the error lrlib prints must not
repeat it. Finally the repository's own artifacts (the shipped cache, results, executed
notebooks, figures, logs) are scanned for anything that looks like a key.
"""

from __future__ import annotations

import gzip
import logging
import os
import re
import secrets
from pathlib import Path

import pytest
from drill_server import DrillServer

from lrlib.cli import main

REPO = Path(__file__).resolve().parents[1]
# a key the developer may have in their shell (conftest removes it before each test)
_SHELL_KEY = os.environ.get("OPENAI_API_KEY", "")
# key formats (case-sensitive) and auth fields (matched on the lower-cased bytes). One
# pattern per literal start, no top-level alternation: re then jumps from one occurrence of
# the start to the next (~1 s per pattern over the shipped data's 730 MB unzipped, against
# 7-12 s for the same alternatives in one pattern); "x-api-key: ..." is found as "api-key: ..."
KEY_LIKE = [
    re.compile(rb"sk-(?:proj-|svcacct-|ant-)?[A-Za-z0-9_\-]{20,}"),  # OpenAI / Anthropic
    re.compile(rb"AKIA[0-9A-Z]{16}"),  # AWS
    re.compile(rb"hf_[A-Za-z0-9]{30,}"),  # Hugging Face
    re.compile(rb"gh[pousr]_[A-Za-z0-9]{36}"),  # GitHub
    re.compile(rb"xox[abpr]-[A-Za-z0-9-]{10,}"),  # Slack
]
AUTH_LIKE = [
    re.compile(rb"bearer\s+[a-z0-9._\-~+/]{8,}"),
    re.compile(rb"authorization[\"']?\s*[:=]\s*[\"']?[a-z0-9._\-]{8,}"),
    re.compile(rb"api[_-]key[\"']?\s*[:=]\s*[\"']?[a-z0-9._\-]{8,}"),
]
# what lrlib writes: shipped data, notebooks, figures, and the user area (runs, results,
# answer cache, lab saves)
ARTIFACTS = ("data", "notebooks", "figures", ".lrlib")
SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".ipynb_checkpoints"}


def _files(root: Path):
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        yield from (Path(folder) / name for name in sorted(names))


def _read(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.suffix == ".gz" else raw


def _scan(blob: bytes, needles: list[bytes]) -> list[str]:
    found = [m.group(0) for pattern in KEY_LIKE for m in pattern.finditer(blob)]
    lower = blob.lower()
    found += [m.group(0) for pattern in AUTH_LIKE for m in pattern.finditer(lower)]
    found += [n[:12] + b"..." for n in needles if n and n in blob]
    return [f[:40].decode("latin-1") for f in found]


@pytest.fixture
def canary(monkeypatch) -> str:
    key = "sk-lrlib-canary-" + secrets.token_hex(16)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    return key


def _ok(n, body):
    return ("ok", "<answer>[(1, 3), (8, 12)]</answer>")


def test_canary_key_goes_to_the_server_and_nowhere_else(
    canary, tmp_path, monkeypatch, capsys, caplog
):
    caplog.set_level(logging.DEBUG)  # httpx, openai and lrlib at their most talkative
    monkeypatch.setenv("OPENAI_LOG", "debug")
    monkeypatch.setenv("LRLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LRLIB_WORK_DIR", str(tmp_path / "work"))
    with DrillServer(_ok) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        common = ["--split", "validation"]
        assert main(["run", *common, "--limit", "3", "--model", "canary-model", "--view",
                     "full", "--no-think", "--cache-dir", str(tmp_path / "cache"), "-o",
                     str(tmp_path / "run.csv"), "--no-progress"]) == 0  # fmt: skip
        spec = "lineretriever:prompt=defender,view=full,think=False,model='canary-model'"
        assert main(["inject", *common, "--steps", "2", "--reducers", f"full;{spec}",
                     "--out", str(tmp_path / "injection.csv.gz"), "--no-progress"]) == 0  # fmt: skip
    # the key was really in use: the server saw it
    auth = [{k.lower(): v for k, v in h.items()}.get("authorization") for h in server.headers]
    assert auth and set(auth) == {f"Bearer {canary}"}
    out = capsys.readouterr()
    printed = (out.out + out.err + caplog.text).encode()
    files = list(_files(tmp_path))
    assert any(p.suffix == ".json" for p in files) and (tmp_path / "run.csv").exists()
    leaks = {str(p.relative_to(tmp_path)): _scan(_read(p), [canary.encode()]) for p in files}
    leaks["printed and logged"] = _scan(printed, [canary.encode()])
    assert not {k: v for k, v in leaks.items() if v}


def test_a_server_quoting_the_key_back_does_not_make_lrlib_print_it(
    canary, tmp_path, monkeypatch, capsys, caplog
):
    caplog.set_level(logging.DEBUG)
    refuse = lambda n, body: ("status", 401, f"Incorrect API key provided: {canary}.")  # noqa: E731
    with DrillServer(refuse) as server:
        code = main(["run", "--split", "validation", "--limit", "1", "--base-url", server.url,
                     "--model", "canary-model", "--cache-dir", str(tmp_path / "cache"),
                     "-o", str(tmp_path / "run.csv"), "--no-progress"])  # fmt: skip
    out = capsys.readouterr()
    assert code == 1 and "401" in out.err  # it says what went wrong...
    printed = (out.out + out.err + caplog.text).encode()
    assert canary.encode() not in printed  # ...without repeating the key
    assert not [p for p in _files(tmp_path) if canary.encode() in _read(p)]


def test_repository_artifacts_hold_no_key_like_strings():
    needles = [_SHELL_KEY.encode()] if len(_SHELL_KEY) >= 8 else []
    scanned, leaks = 0, {}
    for folder in ARTIFACTS:
        for path in _files(REPO / folder):
            scanned += 1
            found = _scan(_read(path), needles)
            if found:
                leaks[str(path.relative_to(REPO))] = found
    logs = [p for p in _files(REPO) if p.suffix == ".log"]
    for path in logs:
        found = _scan(_read(path), needles)
        if found:
            leaks[str(path.relative_to(REPO))] = found
    assert scanned > 0  # the dataset at least is always there
    assert not leaks


def test_the_scanner_finds_what_it_looks_for():
    samples = [
        b'{"api_key": "abcd1234efgh"}',
        b"Authorization: Bearer eyJhbGciOi.x",
        b"key sk-proj-" + b"a" * 30,
        b"AKIA" + b"B" * 16,
        b"hf_" + b"c" * 34,
        b"ghp_" + b"d" * 36,
        b"xoxb-" + b"e" * 12,
        b"X-Api-Key: 0123456789",
        b"'authorization' = 'Basic0123456789'",
    ]
    assert all(_scan(s, []) for s in samples)
    assert not _scan(b'{"text": "<answer>[(1, 3)]</answer>", "usage": {"prompt_tokens": 9}}', [])
    assert _scan(b"...canary-value...", [b"canary-value"])
