"""lrlib.core.tokens: exact counts, offline files, exact bottom truncation."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lrlib.core import bpe, tokens
from lrlib.core.tokens import count_lines, count_tokens, get_encoding, truncate_bottom
from lrlib.data.dataset import load_steps


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
@given(st.lists(real_line, min_size=1, max_size=80), st.sampled_from(["o200k_base", "cl100k_base"]))
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


# ---- the fast encoder (riptoken) against the reference (tiktoken) ----------------------


@pytest.fixture
def fresh_backend(monkeypatch):
    """Forget which encoders were chosen (and every memoised count) before and after."""
    for forget in (bpe._fast.cache_clear, bpe._counter.cache_clear, tokens.clear_line_memo):
        forget()
    yield monkeypatch
    monkeypatch.undo()
    for forget in (bpe._fast.cache_clear, bpe._counter.cache_clear, tokens.clear_line_memo):
        forget()


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_fast_encoder_matches_tiktoken_on_every_recorded_tree(encoding):
    fast = tokens._fast(encoding)
    if fast is None:
        pytest.skip("riptoken is not installed (tiktoken is used: nothing to compare)")
    enc = get_encoding(encoding)
    steps = load_steps()
    assert len(steps) >= 400
    for step in steps:
        for text in (step.tree, step.goal):
            assert fast.encode_ordinary(text) == enc.encode_ordinary(text)


hostile = st.lists(
    st.one_of(
        st.sampled_from(["\n", "\r\n", "\r", "/", " " * 70, "\t", "  \n", "\u00a0", "\u2028",
                         "<|endoftext|>", "<|fim_prefix|>", "'s", "'LL", "[12] button 'Go'",
                         "1234567890123", "😀", "👍🏽", "\U000e0041", "\ue604", "ab" * 40, "\x00"]),
        st.text(max_size=12),
    ),
    max_size=200,
).map("".join)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(hostile)
def test_fast_encoder_matches_tiktoken_on_hostile_text(text):
    fast, enc = tokens._fast("o200k_base"), get_encoding("o200k_base")
    try:
        encoded = fast.encode_ordinary(text) if fast is not None else None
    except Exception:  # refused (lone surrogates): lrlib hands such text to tiktoken
        encoded = None
    if encoded is not None:
        assert encoded == enc.encode_ordinary(text)
    assert count_tokens(text) == len(enc.encode_ordinary(text))


def test_tiktoken_when_riptoken_is_missing(fresh_backend):
    fresh_backend.setitem(sys.modules, "riptoken", None)  # import riptoken -> ImportError
    fresh_backend.setitem(sys.modules, "toktok", None)
    assert tokens.backend_name() == "tiktoken"
    text = "RootWebArea 'x'\n\t[1] button 'Go'\n" * 200
    assert count_tokens(text) == len(get_encoding().encode_ordinary(text))


def test_tiktoken_when_riptoken_disagrees_on_the_self_check(fresh_backend):
    class Wrong:
        def __init__(self, *args):
            pass

        def encode_ordinary(self, text):
            return [0] * len(text)  # one token per character: wrong on most texts

    fresh_backend.setitem(sys.modules, "riptoken", types.SimpleNamespace(CoreBPE=Wrong))
    fresh_backend.setenv("LRLIB_TOKENIZER", "riptoken")  # toktok off: riptoken is asked
    assert tokens.backend_name() == "tiktoken"
    assert count_tokens("hello world") == 2


def test_tiktoken_on_request(fresh_backend):
    fresh_backend.setenv("LRLIB_TOKENIZER", "tiktoken")
    assert tokens.backend_name() == "tiktoken"


def test_text_riptoken_refuses_goes_to_tiktoken():
    text = "RootWebArea 'x'\n\t[1] StaticText 'a\ud800b'\n" * 100  # a lone surrogate
    assert count_tokens(text) == len(get_encoding().encode_ordinary(text))


def test_big_trees_are_counted_in_parallel_pieces_exactly(real_trees, fresh_backend):
    """Without toktok, over _PARALLEL_CHARS the missing lines are encoded in pieces on
    several threads; the per-line counts and the total stay tiktoken's."""
    fresh_backend.setenv("LRLIB_TOKENIZER", "riptoken")
    lines = [ln for t in real_trees.values() for ln in t["tree"].split("\n") if ln.strip()]
    big = []
    while sum(map(len, big)) < 2 * tokens._PARALLEL_CHARS:
        big += [f"{ln} #{len(big)}" for ln in lines]  # every line distinct
    tokens.clear_line_memo()
    text = "\n".join(big)
    enc = get_encoding()
    assert count_tokens(text) == len(enc.encode_ordinary(text))
    sample = big[:: max(1, len(big) // 300)]
    assert tokens.line_token_counts(sample) == [
        len(enc.encode_ordinary(ln + "\n")) for ln in sample
    ]


# ---- the fast counter (toktok, ASCII text) against the reference (tiktoken) -------------


def _toktok(encoding):
    if bpe._counter(encoding) is None:
        pytest.skip("toktok is not installed (nothing to compare)")
    import toktok

    return toktok._encoding(encoding)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_toktok_vocabulary_is_tiktokens_rank_for_rank(encoding):
    core, enc = _toktok(encoding), get_encoding(encoding)
    ranks = enc._mergeable_ranks
    assert core.n_vocab >= len(ranks)
    assert all(core.decode_single_token_bytes(rank) == token for token, rank in ranks.items())


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_toktok_counts_every_recorded_tree_and_line_exactly(encoding):
    core, enc = _toktok(encoding), get_encoding(encoding)
    steps = load_steps()
    assert len(steps) >= 400
    texts = [t for s in steps for t in (s.tree, s.goal)]
    lines = sorted({ln + "\n" for s in steps for ln in s.tree.split("\n")})
    for batch in (texts, lines):
        assert core.count_batch(batch, 1, False) == [len(enc.encode_ordinary(t)) for t in batch]
    # and lrlib's own paths (whole ASCII texts, ASCII runs + other lines), cold
    tokens.clear_line_memo()
    assert [count_tokens(t, encoding) for t in texts] == [
        len(enc.encode_ordinary(t)) for t in texts
    ]


ascii_hostile = st.lists(
    st.one_of(
        st.sampled_from(["\n", "\r\n", "\r", "/", " " * 70, "\t", "  \n", "<|endoftext|>",
                         "<|fim_prefix|>", "'s", "'LL", "'Ve", "[12] button 'Go'", "1234567890123",
                         "ab" * 40, "\x00", "\x1c", "\x0b\x0c", "'", "//", "\t\t[a5] link 'x'"]),
        st.text(st.characters(max_codepoint=127), max_size=12),
    ),
    max_size=200,
).map("".join)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(ascii_hostile, st.sampled_from(["o200k_base", "cl100k_base"]))
def test_toktok_matches_tiktoken_on_hostile_ascii_text(text, encoding):
    core, enc = _toktok(encoding), get_encoding(encoding)
    expected = len(enc.encode_ordinary(text))
    assert core.count(text) == expected == bpe.count(text, encoding)
    pieces = text.split("\n")
    assert (
        core.count_batch(pieces * 2, 1, False) == [len(enc.encode_ordinary(p)) for p in pieces] * 2
    )


def test_toktok_is_kept_off_non_ascii_text():
    """The Rust engines' Unicode tables differ on recently assigned characters: toktok
    reads U+323B0 (CJK Extension H, Unicode 15) as tiktoken does not; lrlib never asks it."""
    core, enc = _toktok("cl100k_base"), get_encoding("cl100k_base")
    text = "\U000323b0's"
    assert core.count(text) != len(enc.encode_ordinary(text))  # why only ASCII goes to toktok
    mixed = ["RootWebArea 'x'", f"\t[1] StaticText '{text}'", "\t[2] button 'Go'"] * 400
    tokens.clear_line_memo()
    assert count_lines(mixed, "cl100k_base") == len(enc.encode_ordinary("\n".join(mixed)))
    assert bpe.count_each([text, "ab"], "cl100k_base") == [len(enc.encode_ordinary(text)), 1]


mixed_line = st.one_of(real_line, st.text(max_size=30).filter(lambda t: "\n" not in t))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(mixed_line, min_size=1, max_size=60), st.sampled_from(["o200k_base", "cl100k_base"])
)
def test_counts_by_ascii_runs_are_exact(lines, encoding):
    """ASCII runs by toktok, other lines by the memo: always the whole text's count."""
    enc = get_encoding(encoding)
    text = "\n".join(lines)
    tokens.clear_line_memo()
    assert count_lines(lines, encoding) == len(enc.encode_ordinary(text))
    assert count_lines(lines, encoding) == len(enc.encode_ordinary(text))  # warm
    assert count_tokens(text * 30, encoding) == len(enc.encode_ordinary(text * 30))


def test_riptoken_when_toktok_is_missing(fresh_backend):
    fresh_backend.setitem(sys.modules, "toktok", None)
    assert tokens.backend_name() in ("riptoken", "tiktoken")
    text = "RootWebArea 'x'\n\t[1] button 'Go'\n\tStaticText 'é'\n" * 200
    assert count_tokens(text) == len(get_encoding().encode_ordinary(text))


def test_toktok_off_when_it_disagrees_on_the_self_check(fresh_backend):
    class Wrong:
        def count(self, text):
            return len(text)

        def count_batch(self, texts, threads, with_special):
            return [len(t) for t in texts]

    fresh_backend.setitem(sys.modules, "toktok", types.SimpleNamespace(_encoding=lambda n: Wrong()))
    assert not tokens.backend_name().startswith("toktok")
    assert count_tokens("hello world " * 400) == len(
        get_encoding().encode_ordinary("hello world " * 400)
    )
