"""Coverage-guided fuzzing of the parsers with atheris (libFuzzer), outside the test suite.

The hypothesis tests in test_fuzz.py draw from grammars; this harness lets libFuzzer grow
inputs by branch coverage instead. Targets (the same contracts as the property tests):

- ``answer``: :func:`lrlib.core.ranges.parse_answer` in both modes, with and without a page,
  raises nothing but :class:`AnswerParseError` and returns a normalised selection;
- ``echo``: a model output that is ``<think>`` plus any prefix of the page is never read as
  an answer when the page is given;
- ``tree``: :func:`lrlib.core.axtree.parse` never raises, and :func:`lrlib.core.pruning.prune` keeps
  exactly the selected lines, verbatim, under every strategy.

Needs ``pip install -e '.[fuzz]'``. Run, e.g.:
``.venv/bin/python tests/fuzz_atheris.py answer -max_total_time=300 -print_final_stats=1``
"""

from __future__ import annotations

import sys


def _answer(data: bytes) -> None:
    from lrlib.core.ranges import AnswerParseError, parse_answer

    fdp = _provider(data)
    n = fdp.ConsumeIntInRange(1, 10**18) if fdp.ConsumeBool() else fdp.ConsumeIntInRange(1, 500)
    mode = "json" if fdp.ConsumeBool() else "tags"
    page = (
        fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 200)) if fdp.ConsumeBool() else None
    )
    text = fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes())
    try:
        sel = parse_answer(text, n, mode=mode, page=page)
    except AnswerParseError:
        return
    assert sel.ranges and all(1 <= a <= b <= n for a, b in sel.ranges), (text, n)
    pairs = zip(sel.ranges, sel.ranges[1:], strict=False)
    assert all(b1 + 1 < a2 for (_, b1), (a2, _) in pairs), sel


def _echo(data: bytes) -> None:
    from lrlib.core.ranges import AnswerParseError, parse_answer

    fdp = _provider(data)
    k = fdp.ConsumeIntInRange(0, 400)
    page = fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes())
    try:
        sel = parse_answer("<think>" + page[:k], 500, page=page)
    except AnswerParseError:
        return
    raise AssertionError(f"a copy of the page was read as the answer {sel}: {page[:k]!r}")


def _tree(data: bytes) -> None:
    from lrlib.core.axtree import parse, split_lines
    from lrlib.core.pruning import STRATEGIES, prune

    fdp = _provider(data)
    chosen = [fdp.ConsumeIntInRange(-3, 80) for _ in range(fdp.ConsumeIntInRange(0, 12))]
    strategy = STRATEGIES[fdp.ConsumeIntInRange(0, len(STRATEGIES) - 1)]
    text = fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes())
    tree = parse(text)
    assert tree.texts == split_lines(text)
    assert all(-1 <= p < i for i, p in enumerate(tree.parents))
    out = prune(tree, chosen, strategy, markers=fdp.ConsumeBool())
    assert out.kept == sorted({c for c in chosen if 1 <= c <= len(tree)})
    assert all(tree.texts[k - 1] in out.lines for k in out.kept)


def _dict_escape(word: str) -> str:
    """A libFuzzer dictionary entry: printable ASCII as is, anything else as ``\\xHH``."""
    return "".join(
        chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\x{b:02X}" for b in word.encode()
    )


TARGETS = {"answer": _answer, "echo": _echo, "tree": _tree}


def _provider(data: bytes):
    import atheris

    return atheris.FuzzedDataProvider(data)


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] not in TARGETS:
        sys.exit(f"usage: {argv[0]} {{{','.join(TARGETS)}}} [libFuzzer options]")
    import atheris

    with atheris.instrument_imports():
        import lrlib.core.axtree
        import lrlib.core.pruning
        import lrlib.core.ranges  # noqa: F401
    target = TARGETS[argv[1]]
    options = argv[2:]
    if not any(o.startswith("-dict=") for o in options):  # the tokens the parsers look for
        import tempfile

        words = ["<think>", "</think>", "<answer>", "</answer>", "< / answer >", '{"ranges": ',
                 "[[", "]]", "(", ")", ", ", "-", "..", " to ", ":", "\n", "\t", "[12] ",
                 "button 'Go'", "StaticText ", "999999999999999999999", "```json"]  # fmt: skip
        with tempfile.NamedTemporaryFile("w", suffix=".dict", delete=False) as f:
            f.write("".join(f'"{_dict_escape(w)}"\n' for w in words))
        options.append(f"-dict={f.name}")
    atheris.Setup([argv[0], *options], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
