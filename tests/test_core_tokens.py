"""lrlib.core.tokens: exact counts (tiktoken's), offline files, exact bottom truncation."""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlib.core import tokens
from lrlib.core.tokens import (
    count_each,
    count_lines,
    count_tokens,
    get_encoding,
    line_token_counts,
    token_byte_lengths,
    truncate_bottom,
)
from lrlib.data.dataset import load_steps

ENCODINGS = ["o200k_base", "cl100k_base"]


def test_offline_seeding_in_a_fresh_process(tmp_path):
    env = {
        k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")
    }
    env["LRLIB_WORK_DIR"] = str(tmp_path)
    code = (
        "import os, json, socket\n"
        "def no_net(*a, **k): raise OSError('network used')\n"
        "socket.socket.connect = no_net\n"
        "from lrlib.core.tokens import count_tokens\n"
        "print(json.dumps([count_tokens('hello world'), os.environ['TIKTOKEN_CACHE_DIR']]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    n, cache = json.loads(out.stdout)
    assert n == 2 and cache == str(tmp_path / "tiktoken")
    expected = {
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    }
    got = {hashlib.sha256(p.read_bytes()).hexdigest() for p in (tmp_path / "tiktoken").iterdir()}
    assert got == expected


def test_a_users_own_cache_setting_is_kept(tmp_path):
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(tmp_path / "mine"), LRLIB_WORK_DIR=str(tmp_path))
    code = "import os, lrlib.core.tokens as t; t._seed_tiktoken_cache(); print(os.environ['TIKTOKEN_CACHE_DIR'])"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str(tmp_path / "mine")
    assert not (tmp_path / "tiktoken").exists()


def test_counts_are_exact_on_real_trees(real_trees):
    enc = get_encoding()
    for item in real_trees.values():
        text = item["tree"]
        assert count_tokens(text) == len(enc.encode_ordinary(text))
        assert count_tokens(text, "cl100k_base") == len(
            get_encoding("cl100k_base").encode_ordinary(text)
        )


def test_special_tokens_are_plain_text():
    assert count_tokens("<|endoftext|>") == len(get_encoding().encode_ordinary("<|endoftext|>")) > 1


real_line = st.sampled_from(
    [
        "RootWebArea 'Home'",
        "\t[12] button 'Go'",
        "\t\tStaticText 'x'",
        "/path",
        "",
        "  ",
        "\r",
        "'",
        "a'",
        "\t\t[a5] link 'Next', url='https://x.y/z?q=1'",
        "é\u2028ü",
        "<|endoftext|>",
        "StaticText '...'",
        "\t",
        "1/2",
        "'''",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(real_line, min_size=1, max_size=80), st.sampled_from(ENCODINGS))
def test_line_sums_equal_whole_encodes(lines, encoding):
    text = "\n".join(lines)
    expected = len(get_encoding(encoding).encode_ordinary(text))
    assert count_tokens(text * 40, encoding) == len(
        get_encoding(encoding).encode_ordinary(text * 40)
    )
    assert count_lines(lines, encoding) == expected


def test_truncate_bottom_is_exact(real_trees):
    text = real_trees["offsite_bestbuy_large"]["tree"]
    total = count_tokens(text)
    assert truncate_bottom(text, total) == text
    lines = text.split("\n")
    for budget in (0, 3, 50, 999, 4000, total - 1):
        cut = truncate_bottom(text, budget)
        assert count_tokens(cut) <= budget
        k = len(cut.split("\n")) if cut else 0
        assert lines[:k] == (cut.split("\n") if cut else [])
        assert count_tokens("\n".join(lines[: k + 1])) > budget
    assert truncate_bottom("a long first line\nb", 2) == ""


# ---- every path of the module against tiktoken itself ----------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_counts_equal_tiktoken_on_every_recorded_tree_and_line(encoding):
    enc = get_encoding(encoding)
    steps = load_steps()
    assert len(steps) >= 400
    texts = [t for s in steps for t in (s.tree, s.goal)]
    expected = [len(enc.encode(t, disallowed_special=())) for t in texts]
    tokens.clear_line_memo()
    for _ in ("cold", "warm"):  # the memo of line counts empty, then full
        assert [count_tokens(t, encoding) for t in texts] == expected
        assert [count_lines(t.split("\n"), encoding) for t in texts] == expected
    lines = sorted({ln for s in steps for ln in s.tree.split("\n")})
    assert line_token_counts(lines, encoding) == [len(enc.encode(ln + "\n")) for ln in lines]
    assert count_each(texts, encoding) == expected


hostile = st.lists(
    st.one_of(
        st.sampled_from(["\n", "\r\n", "\r", "/", " " * 70, "\t", "  \n", "\u00a0", "\u2028",
                         "<|endoftext|>", "<|fim_prefix|>", "'s", "'LL", "[12] button 'Go'",
                         "1234567890123", "😀", "👍🏽", "\U000e0041", "\ue604", "ab" * 40, "\x00",
                         "\U000323b0's", "\x1c", "\x0b\x0c", "//", "\t\t[a5] link 'x'"]),
        st.text(max_size=12),
    ),
    max_size=200,
).map("".join)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(hostile, st.sampled_from(ENCODINGS))
def test_counts_equal_tiktoken_on_hostile_text(text, encoding):
    enc = get_encoding(encoding)
    expected = len(enc.encode_ordinary(text))
    tokens.clear_line_memo()
    for _ in range(2):  # cold, then warm
        assert count_tokens(text, encoding) == expected
        assert count_tokens(text * 30, encoding) == len(enc.encode_ordinary(text * 30))
        assert count_lines(text.split("\n"), encoding) == expected
    lines = text.split("\n")
    assert line_token_counts(lines, encoding) == [
        len(enc.encode_ordinary(ln + "\n")) for ln in lines
    ]
    assert count_each(lines, encoding) == [len(enc.encode_ordinary(ln)) for ln in lines]


mixed_line = st.one_of(real_line, st.text(max_size=30).filter(lambda t: "\n" not in t))


@settings(max_examples=300, deadline=None)
@given(st.lists(mixed_line, min_size=1, max_size=60), st.sampled_from(ENCODINGS))
def test_counts_by_lines_are_exact_cold_and_warm(lines, encoding):
    enc = get_encoding(encoding)
    text = "\n".join(lines)
    tokens.clear_line_memo()
    assert count_lines(lines, encoding) == len(enc.encode_ordinary(text))
    assert count_lines(lines, encoding) == len(enc.encode_ordinary(text))  # warm
    assert count_tokens(text * 30, encoding) == len(enc.encode_ordinary(text * 30))


def test_lone_surrogates_are_counted_as_tiktoken_does():
    text = "RootWebArea 'x'\n\t[1] StaticText 'a\ud800b'\n" * 100
    assert count_tokens(text) == len(get_encoding().encode_ordinary(text))


def test_a_big_tree_of_new_lines_is_counted_exactly_cold(real_trees):
    lines = [ln for t in real_trees.values() for ln in t["tree"].split("\n") if ln.strip()]
    big = [f"{ln} #{i}" for i, ln in enumerate(lines * 4)]  # every line distinct
    tokens.clear_line_memo()
    text = "\n".join(big)
    enc = get_encoding()
    assert count_tokens(text) == len(enc.encode_ordinary(text))
    sample = big[:: max(1, len(big) // 300)]
    assert line_token_counts(sample) == [len(enc.encode_ordinary(ln + "\n")) for ln in sample]


def test_a_recent_unicode_character_is_counted_as_tiktoken_does():
    """U+323B0 (CJK Extension H, Unicode 15) in lines counted one by one and whole."""
    enc = get_encoding("cl100k_base")
    text = "\U000323b0's"
    mixed = ["RootWebArea 'x'", f"\t[1] StaticText '{text}'", "\t[2] button 'Go'"] * 400
    tokens.clear_line_memo()
    assert count_lines(mixed, "cl100k_base") == len(enc.encode_ordinary("\n".join(mixed)))
    assert count_each([text, "ab"], "cl100k_base") == [len(enc.encode_ordinary(text)), 1]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_token_byte_lengths_are_the_tokens_bytes(real_trees, encoding):
    enc, lengths = get_encoding(encoding), token_byte_lengths(encoding)
    text = real_trees["offsite_bestbuy_large"]["tree"] + " é😀\ue604"
    found = enc.encode_ordinary(text)
    assert [int(n) for n in lengths[found]] == [len(b) for b in enc.decode_tokens_bytes(found)]
    assert int(lengths[found].sum()) == len(text.encode("utf-8"))


def test_no_private_attribute_of_another_package_and_no_engine_switch():
    """The module uses tiktoken's public API only (no ``x._name``), and reads no
    environment variable but tiktoken's own cache settings."""
    source = inspect.getsource(tokens)
    private = [
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    ]
    assert private == []
    assert "LRLIB_TOKENIZER" not in source
    assert _env_names(source) == []  # tiktoken's cache settings come through lrlib.settings
    assert "current().tiktoken_cache_dir" in source and 'export_env("TIKTOKEN_CACHE_DIR"' in source


def _env_names(source: str) -> list[str]:
    calls = [
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Subscript | ast.Call)
        and "environ" in ast.unparse(n.value if isinstance(n, ast.Subscript) else n.func)
    ]
    names = []
    for n in calls:
        arg = n.slice if isinstance(n, ast.Subscript) else n.args[0]
        names.append(ast.literal_eval(arg))
    return names


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_counts_stay_exact_when_the_memo_overflows(real_trees, encoding, monkeypatch):
    """A tiny memo is emptied over and over, on the whole-text and the new-lines paths."""
    enc = get_encoding(encoding)
    monkeypatch.setattr(tokens, "_LINE_MEMO_MAX", 50)
    tokens.clear_line_memo()
    texts = [t["tree"] for t in real_trees.values() if len(t["tree"]) > 3 * tokens._SHORT]
    assert len(texts) >= 2
    for text in texts + texts[::-1]:
        lines = text.split("\n")
        assert count_lines(lines, encoding) == len(enc.encode_ordinary(text))  # whole text
        assert len(tokens._line_memo[encoding]) <= len(lines)
        k = len(lines) // 2
        half = [*lines[:k], f"\t\t... {k} lines pruned ...", *lines[k : k + 3], "\tend"]
        # the new lines only (most are known), then the memo is emptied
        assert count_lines(half, encoding) == len(enc.encode_ordinary("\n".join(half)))
        assert len(tokens._line_memo[encoding]) <= 50


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_lines_holding_newlines_are_split_by_bytes(encoding):
    """Pieces with newlines of their own (glued blank lines, or lines given with a "\\n")
    make more tokens end in a newline than there are pieces: counted by byte offsets."""
    enc = get_encoding(encoding)
    lines = ["RootWebArea 'é'", "", "\t[1] button 'Go'\n\n\tx", "  ", "/path", "\tStaticText 'ü'"]
    lines = (lines * 120)[:-1] + ["end"]
    tokens.clear_line_memo()
    assert count_lines(lines, encoding) == len(enc.encode_ordinary("\n".join(lines)))
    assert line_token_counts(lines, encoding) == [
        len(enc.encode_ordinary(ln + "\n")) for ln in lines
    ]
