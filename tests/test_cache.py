"""ResponseCache: content addressing, atomic concurrent writes, corruption, secrets."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import textwrap

import pytest
from fake_openai import Script, chat_body, serve
from hypothesis import given
from hypothesis import strategies as st

from lrlib.llm.cache import ResponseCache, request_key
from lrlib.llm.client import LLMClient

MSGS = [{"role": "user", "content": "1: [3] button 'Go'"}]
ENTRY = {"text": "<answer>1</answer>", "usage": {"prompt_tokens": 9}, "latency_s": 0.5}


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LRLIB_CACHE_DIR", str(tmp_path / "default-cache"))


def key(**changes) -> str:
    args = {
        "endpoint": "compatible",
        "model": "m",
        "messages": MSGS,
        "params": {"temperature": 0.0, "max_tokens": 64},
    } | changes
    return request_key(args["endpoint"], args["model"], args["messages"], args["params"])


def test_key_covers_everything_that_determines_the_answer():
    base = key()
    variants = [
        key(endpoint="openai"),
        key(model="m2"),
        key(messages=[{"role": "user", "content": "1: [3] button 'Stop'"}]),
        key(messages=[{"role": "system", "content": "1: [3] button 'Go'"}]),
        key(params={"temperature": 0.7, "max_tokens": 64}),
        key(params={"temperature": 0.0, "max_tokens": 64, "response_format": {"type": "json"}}),
    ]
    assert len({base, *variants}) == len(variants) + 1
    assert key(params={"max_tokens": 64, "temperature": 0.0, "seed": None}) == base


@given(
    st.dictionaries(
        st.sampled_from(["temperature", "seed", "max_tokens", "top_p"]), st.integers(0, 5)
    ),
    st.text(max_size=50),
)
def test_key_is_order_independent_and_content_sensitive(params, content):
    msgs = [{"role": "user", "content": content}]
    reordered = dict(reversed(list(params.items())))
    a = request_key("e", "m", msgs, params)
    assert a == request_key("e", "m", msgs, reordered)
    assert a != request_key("e", "m", [{"role": "user", "content": content + "x"}], params)


def test_roundtrip_sharded_and_compact(tmp_path):
    cache = ResponseCache(tmp_path)
    k = key()
    path = cache.put(k, ENTRY)
    assert path == tmp_path / k[:2] / f"{k}.json" and path.stat().st_size < 600
    got = cache.get(k)
    assert got["text"] == ENTRY["text"] and got["usage"] == ENTRY["usage"]
    assert got["latency_s"] == 0.5 and got["key"] == k
    assert k in cache and len(cache) == 1 and list(cache.keys()) == [k]
    assert (cache.stats.hits, cache.stats.writes) == (1, 1)
    assert not list(tmp_path.rglob("*.tmp"))


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw.replace("<answer>1</answer>", "<answer>2</answer>"),  # edited answer
        lambda raw: raw[: len(raw) // 2],  # truncated write
        lambda raw: "\x00garbage",
        lambda raw: json.dumps({**json.loads(raw), "key": "0" * 64}),  # entry of another key
    ],
)
def test_corrupt_entry_is_detected_and_ignored(tmp_path, damage):
    cache = ResponseCache(tmp_path)
    k = key()
    path = cache.put(k, ENTRY)
    path.write_text(damage(path.read_text()))
    assert cache.get(k) is None and k not in cache
    assert cache.stats.corrupt >= 1
    cache.put(k, ENTRY)  # a fresh answer replaces it
    assert cache.get(k)["text"] == ENTRY["text"]


def test_refresh_misses_and_overwrites(tmp_path):
    k = key()
    ResponseCache(tmp_path).put(k, ENTRY)
    fresh = ResponseCache(tmp_path, refresh=True)
    assert fresh.get(k) is None
    fresh.put(k, {**ENTRY, "text": "new"})
    assert ResponseCache(tmp_path).get(k)["text"] == "new"


def test_readonly_never_writes(tmp_path):
    cache = ResponseCache(tmp_path / "ro", readonly=True)
    cache.put(key(), ENTRY)
    assert not (tmp_path / "ro").exists()


def test_refuses_unknown_fields_and_secrets(tmp_path):
    cache = ResponseCache(tmp_path)
    with pytest.raises(ValueError, match="cannot hold"):
        cache.put(key(), {**ENTRY, "messages": MSGS})
    with pytest.raises(ValueError, match="API key"):
        cache.put(
            key(), {**ENTRY, "meta": {"note": "sk-live-123456789"}}, secrets=["sk-live-123456789"]
        )
    with pytest.raises(ValueError, match="authorization"):
        cache.put(key(), {**ENTRY, "runtime": {"headers": {"Authorization": "x"}}})
    # the answer itself may mention such words (a page about authorization)
    cache.put(key(), {**ENTRY, "text": "Authorization required: <answer>1</answer>"})
    assert not list(tmp_path.rglob("*.tmp"))


def test_no_key_or_auth_header_reaches_the_cache(httpserver, tmp_path):
    secret = "sk-proj-" + secrets.token_urlsafe(24)  # made per run, never a literal
    script = Script(lambda body, n: chat_body(f"<answer>{n + 1}</answer>"))
    client = LLMClient(
        "m", base_url=serve(httpserver, script), api_key=secret, cache=ResponseCache(tmp_path)
    )
    client.complete(MSGS)
    client.complete(MSGS, response_format={"type": "json_object"})
    assert script.headers[0]["Authorization"] == f"Bearer {secret}"  # it was sent...
    files = list(tmp_path.rglob("*"))
    assert len([f for f in files if f.suffix == ".json"]) == 2
    for f in files:  # ...and is nowhere on disk
        if f.is_file():
            blob = f.read_text().lower()
            assert secret.lower() not in blob and "bearer" not in blob
            assert "authorization" not in blob


WRITER = textwrap.dedent(
    """
    import sys
    from lrlib.llm.cache import ResponseCache, request_key
    root, name = sys.argv[1], sys.argv[2]
    cache = ResponseCache(root)
    for i in range(300):
        shared = i % 2 == 0  # half the keys are written by both processes
        content = f"q{i}" if shared else f"{name}-q{i}"
        k = request_key("compatible", "m", [{"role": "user", "content": content}], {})
        cache.put(k, {"text": f"{name} answers {content} " + "x" * 200, "latency_s": 0.1})
        if shared:
            got = cache.get(k)  # a reader never sees half an entry
            assert got is not None and got["text"].endswith("x" * 200), i
    """
)


def test_two_processes_write_at_once(tmp_path):
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), name], stderr=subprocess.PIPE, text=True
        )
        for name in ("A", "B")
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    cache = ResponseCache(tmp_path)
    keys = list(cache.keys())
    assert len(keys) == 150 + 2 * 150
    for k in keys:
        entry = cache.get(k)
        assert entry is not None and entry["text"].split()[0] in ("A", "B")
    assert cache.stats.corrupt == 0
    assert not list(tmp_path.rglob("*.tmp"))


def test_new_answers_go_to_the_user_area_and_the_shipped_cache_is_only_read(tmp_path, monkeypatch):
    """The default cache writes under .lrlib (gitignored), reads data/cache/llm too, and
    never writes the shipped layer, not even when refreshing."""
    from lrlib import paths

    monkeypatch.delenv("LRLIB_CACHE_DIR")
    monkeypatch.setenv("LRLIB_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("LRLIB_DATA_DIR", str(tmp_path / "data"))
    shipped = ResponseCache(paths.shipped_cache_dir())
    old, new = key(), key(model="m2")
    shipped.put(old, ENTRY)
    before = sorted(p.read_bytes() for p in paths.shipped_cache_dir().rglob("*.json"))
    cache = ResponseCache()
    assert cache.root == tmp_path / "work" / "cache" / "llm"
    assert cache.get(old)["text"] == ENTRY["text"]  # replayed from the shipped layer
    cache.put(new, {**ENTRY, "text": "fresh"})
    ResponseCache(refresh=True).put(old, {**ENTRY, "text": "refreshed"})
    assert sorted(p.read_bytes() for p in paths.shipped_cache_dir().rglob("*.json")) == before
    assert ResponseCache().get(old)["text"] == "refreshed"  # the user's answer shadows
    assert ResponseCache().get(new)["text"] == "fresh" and new not in shipped
    assert set(ResponseCache().keys()) == {old, new}  # keys(): the layer it writes


def test_the_shipped_answers_replay_through_the_default_cache(monkeypatch, tmp_path):
    """The repository's own layout: a key of data/cache/llm is found by ResponseCache()."""
    from lrlib import paths

    monkeypatch.delenv("LRLIB_CACHE_DIR")
    monkeypatch.setenv("LRLIB_WORK_DIR", str(tmp_path / "work"))
    first = next(ResponseCache(paths.shipped_cache_dir()).keys())
    assert ResponseCache().get(first) is not None
    assert not (tmp_path / "work" / "cache").exists()  # reading writes nothing


def test_cache_command_lists_both_layers(monkeypatch, tmp_path, capsys):
    """`lrlib cache` (no --refresh): where each layer is and how many answers it holds."""
    from lrlib import paths
    from lrlib.cli import main

    monkeypatch.delenv("LRLIB_CACHE_DIR")
    monkeypatch.setenv("LRLIB_WORK_DIR", str(tmp_path / "work"))
    ResponseCache().put(key(), ENTRY)
    assert main(["cache"]) == 0
    out = capsys.readouterr()
    shipped = len(ResponseCache(paths.shipped_cache_dir()))
    assert shipped > 0 and f"shipped: {paths.shipped_cache_dir()} ({shipped} answers" in out.out
    assert f"user: {tmp_path / 'work' / 'cache' / 'llm'} (1 answer," in out.out
    assert out.err.startswith("lrlib cache: counting")
