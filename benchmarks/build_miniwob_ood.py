"""Build the out-of-domain MiniWoB check set (``data/miniwob_ood.jsonl.gz``).

Usage (needs the optional builder dependencies, not the project's default install)::

    python -m venv /tmp/ood && /tmp/ood/bin/pip install -e '.[ood]'
    /tmp/ood/bin/python benchmarks/build_miniwob_ood.py [--seeds 6] [--tasks click-button,...]

For every MiniWoB++ task type in :data:`ORACLES` and seeds ``0..seeds-1``, BrowserGym
(``browsergym-miniwob``, Debian's chromium, the MiniWoB++ HTML files of the ``miniwob``
package served on localhost) gives the observation: the utterance as ``goal`` and the
accessibility tree flattened by BrowserGym's own ``flatten_axtree_to_str`` (the format of
the recorded WorkArena/WebArena steps). A small hand-written oracle per task reads the goal
and the tree (and, for three tasks, the page's DOM to find where a hidden item is) and
names the next action; the action is executed in BrowserGym. An episode is kept only if
every action ran without error and the task's own reward is 1 at the end, so every kept
step's action is verified (the intermediate steps of multi-step tasks by the final reward).

Rows use the schema of :mod:`lrlib.data.dataset` (the importer's columns): ``benchmark`` is
``"miniwob"``, ``split`` ``"ood"``, ``family``/``task`` ``miniwob.<task>``, ``episode``
``miniwob.<task>_<seed>``. Two deviations from a plain ``flatten_axtree_to_str(obs)`` call,
both to match the recorded traces: ``InlineTextBox`` nodes are ignored (recent Chromium
exposes them in the full AX tree, Playwright's bundled Chromium of the recorded traces did
not), and the local server address is written as ``http://localhost:8000/`` (BrowserGym's
documented MiniWoB URL) whatever port was used.

The set is a CHECK set: never use it to tune a reducer.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "miniwob_ood.jsonl.gz"
CANONICAL_BASE = "http://localhost:8000/"
MAX_STEPS = 16
RETRIES = 2  # an episode whose action timed out is run again (same seed, same page)
ORDINALS = {"1st": 1, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5, "6th": 6, "7th": 7, "8th": 8,
            "9th": 9, "10th": 10}  # fmt: skip


# --- reading the flattened tree -------------------------------------------------------


class Node:
    """One line of the flattened tree: bid, role, name and the rest of the line."""

    def __init__(self, bid: str | None, role: str, name: str, rest: str, depth: int) -> None:
        self.bid, self.role, self.name, self.rest, self.depth = bid, role, name, rest, depth

    def prop(self, key: str) -> str | None:
        m = re.search(rf"\b{key}=('(?:[^'\\]|\\.)*'|\S+?)(?:,|$)", self.rest)
        if not m:
            return None
        raw = m.group(1)
        return str(ast.literal_eval(raw)) if raw.startswith("'") else raw


_LINE = re.compile(
    r"^(\t*)(?:\[([^\]]+)\] )?(\S+)(?: ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"))?(.*)$"
)


def nodes(tree: str) -> list[Node]:
    """The lines of a flattened tree as :class:`Node` objects."""
    out = []
    for line in tree.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        tabs, bid, role, name, rest = m.groups()
        out.append(Node(bid, role, ast.literal_eval(name) if name else "", rest, len(tabs)))
    return out


def find(ns: list[Node], role: str | tuple[str, ...], name: str | None = None) -> list[Node]:
    roles = (role,) if isinstance(role, str) else role
    return [n for n in ns if n.role in roles and n.bid and (name is None or n.name == name)]


def first(ns: list[Node], role: str | tuple[str, ...], name: str | None = None) -> Node:
    found = find(ns, role, name)
    if not found:
        raise Unsolvable(f"no {role} {name!r}")
    return found[0]


def quoted(goal: str) -> list[str]:
    return re.findall(r'"([^"]*)"', goal)


class Unsolvable(Exception):
    """The oracle cannot find its next action on this page."""


# --- oracles: (goal, nodes, page, memo) -> next action -----------------------------------

Oracle = Callable[[str, list[Node], Any, dict], str]


def _submit(ns: list[Node], name: str = "Submit") -> str:
    buttons = [n for n in find(ns, "button") if n.name.lower() == name.lower()]
    if not buttons:
        raise Unsolvable("no submit button")
    return f"click({buttons[0].bid!r})"


def _plan(*actions: Callable[[list[Node]], str]) -> Oracle:
    """An oracle that takes a fixed list of steps, each read from the current tree."""

    def oracle(goal: str, ns: list[Node], page: Any, memo: dict) -> str:
        i = memo.get("i", 0)
        if i >= len(actions):
            raise Unsolvable("plan exhausted")
        memo["i"] = i + 1
        return actions[i](ns)

    return oracle


def _fields_then_submit(
    values: Callable[[str, list[Node]], list[tuple[str, str]]], button="Submit"
):
    """Fill (bid, text) pairs one per step, then press ``button``."""

    def oracle(goal: str, ns: list[Node], page: Any, memo: dict) -> str:
        todo = memo.setdefault("todo", values(goal, ns))
        if todo:
            bid, text = todo.pop(0)
            return f"fill({bid!r}, {text!r})"
        return _submit(ns, button)

    return oracle


def click_button(goal, ns, page, memo):
    return f"click({first(ns, 'button', quoted(goal)[0]).bid!r})"


def click_test_2(goal, ns, page, memo):
    return f"click({first(ns, 'button', goal.split()[-1].rstrip('.')).bid!r})"


def click_button_sequence(goal, ns, page, memo):
    memo["i"] = memo.get("i", 0) + 1
    return f"click({first(ns, 'button', ['ONE', 'TWO'][memo['i'] - 1]).bid!r})"


def click_dialog(goal, ns, page, memo):
    label = quoted(goal)[0]
    label = "Close" if label.lower() == "x" else label
    return f"click({first(ns, 'button', label).bid!r})"


def click_tab(goal, ns, page, memo):
    name = re.search(r"(Tab #\d+)", goal).group(1)
    return f"click({first(ns, 'tab', name).bid!r})"


def _wanted(goal: str) -> set[str]:
    m = re.search(r"Select (.*) and click Submit", goal)
    if not m or m.group(1) == "nothing":
        return set()
    return {w.strip() for w in m.group(1).split(",")}


def click_checkboxes(goal, ns, page, memo):
    wanted = _wanted(goal)
    for n in find(ns, "checkbox"):
        if (n.name in wanted) != (n.prop("checked") == "true"):
            return f"click({n.bid!r})"
    return _submit(ns)


def click_option(goal, ns, page, memo):
    name = re.search(r"Select (.*) and click Submit", goal).group(1)
    radio = first(ns, "radio", name)
    return f"click({radio.bid!r})" if radio.prop("checked") != "true" else _submit(ns)


def choose_list(goal, ns, page, memo):
    name = re.search(r"Select (.*) from the list", goal).group(1)
    box = first(ns, "combobox")
    if memo.get("chosen"):
        return _submit(ns)
    memo["chosen"] = True
    return f"select_option({box.bid!r}, {name!r})"


def click_scroll_list(goal, ns, page, memo):
    names = [w.strip() for w in re.search(r"Select (.*) from the", goal).group(1).split(",")]
    if memo.get("chosen"):
        return _submit(ns)
    memo["chosen"] = True
    return f"select_option({first(ns, 'listbox').bid!r}, {names!r})"


def _text(goal: str) -> str:
    text = quoted(goal)[0]
    if "upper case" in goal:
        return text.upper()
    return text.lower() if "lower case" in goal else text


def focus_text(goal, ns, page, memo):
    m = re.search(r"the (\w+) input textbox", goal)
    k = ORDINALS[m.group(1)] if m else 1
    return f"click({find(ns, 'textbox')[k - 1].bid!r})"


def _login(goal, ns):
    user, password = quoted(goal)[:2]
    boxes = find(ns, "textbox")
    return [(boxes[0].bid, user), (boxes[1].bid, password)]


def _password(goal, ns):
    return [(b.bid, quoted(goal)[0]) for b in find(ns, "textbox")[:2]]


def _table(ns: list[Node]) -> dict[str, str]:
    cells = find(ns, "cell")
    return {cells[i].name: cells[i + 1].name for i in range(0, len(cells) - 1, 2)}


def _read_table(goal, ns):
    key = re.search(r"value of (.*) into the text", goal).group(1)
    return [(first(ns, "textbox").bid, _table(ns)[key])]


def _read_table_2(goal, ns):
    table, out, label = _table(ns), [], None
    for n in ns:
        if n.role == "StaticText" and n.name.endswith(":"):
            label = n.name[:-1]
        elif n.role == "textbox" and label:
            out.append((n.bid, table[label]))
            label = None
    return out


def _find_word(goal, ns):
    k = ORDINALS[re.search(r"Find the (\w+) word", goal).group(1)]
    para = next(
        n for i, n in enumerate(ns) if n.role == "StaticText" and ns[i - 1].role == "paragraph"
    )
    return [(first(ns, "textbox").bid, para.name.split()[k - 1].strip(".,;:!?"))]


def _arith(goal, ns):
    expr = next(n.name for n in ns if n.role == "StaticText" and n.name.endswith("="))
    a, op, b = expr.rstrip("= ").split()
    value = {"+": int(a) + int(b), "-": int(a) - int(b), "x": int(a) * int(b)}[op]
    return [(first(ns, "textbox").bid, str(value))]


def _algebra(goal, ns):
    eq = next(n.name for n in ns if n.role == "StaticText" and "x" in n.name and "=" in n.name
              and n.name.strip() != "x =")  # fmt: skip
    left, right = (s.strip().replace("x", "({x})") for s in eq.split("="))
    if not re.fullmatch(r"[\d\s+\-*(){}x]+", left + right):
        raise Unsolvable(eq)
    for x in range(-999, 1000):
        if eval(left.format(x=x)) == eval(right.format(x=x)):  # noqa: S307 (digits and + - *)
            return [(first(ns, "textbox").bid, str(x))]
    raise Unsolvable(eq)


def _copy_paste(goal, ns):
    boxes = find(ns, "textbox")
    return [(boxes[1].bid, boxes[0].prop("value") or "")]


def _text_transform(goal, ns):
    box = first(ns, "textbox")
    letters = [n.name for n in ns[: ns.index(box)] if n.role == "StaticText"]
    return [(box.bid, "".join(letters))]


def _spinner(goal, ns):
    value = re.search(r"Select (-?\d+) with the spinner", goal).group(1)
    return [(first(ns, "spinbutton").bid, value)]


def _enter_date(goal, ns):
    mm, dd, yyyy = re.search(r"(\d\d)/(\d\d)/(\d{4})", goal).groups()
    return [(first(ns, "Date").bid, f"{yyyy}-{mm}-{dd}")]


def _enter_time(goal, ns):
    h, m, ampm = re.search(r"(\d+):(\d\d) ?([AP]M)", goal).groups()
    hour = int(h) % 12 + (12 if ampm == "PM" else 0)
    return [(first(ns, "InputTime").bid, f"{hour:02d}:{m}")]


def form_sequence_2(goal, ns, page, memo):
    m = re.search(
        r"Check the (\w+) radio button and enter the number \"(-?\d+)\" into the (\w+) textbox",
        goal,
    )
    if not m:
        raise Unsolvable(goal)
    memo["i"] = memo.get("i", 0) + 1
    if memo["i"] == 1:
        return f"click({find(ns, 'radio')[ORDINALS[m.group(1)] - 1].bid!r})"
    if memo["i"] == 2:
        return f"fill({find(ns, 'textbox')[ORDINALS[m.group(3)] - 1].bid!r}, {m.group(2)!r})"
    return _submit(ns)


def _minutes(text: str) -> int:
    h, m = re.match(r"(\d+)h (\d+)m", text).groups()
    return 60 * int(h) + int(m)


def buy_ticket(goal, ns, page, memo):
    tickets = []
    for i, n in enumerate(ns):
        if n.role == "button" and n.name.startswith("Book for $"):
            dur = next(x.name for x in reversed(ns[:i]) if re.match(r"\d+h \d+m", x.name))
            tickets.append((_minutes(dur), int(n.name.split("$")[1]), n.bid))
    key = {"shortest duration": lambda t: t[0], "longest duration": lambda t: -t[0],
           "cheapest cost": lambda t: t[1], "most expensive cost": lambda t: -t[1]}  # fmt: skip
    want = next(k for k in key if k in goal)
    return f"click({min(tickets, key=key[want])[2]!r})"


def click_collapsible(goal, ns, page, memo):
    memo["i"] = memo.get("i", 0) + 1
    if memo["i"] == 1:
        return f"click({next(n for n in find(ns, 'tab') if n.name != 'Submit').bid!r})"
    return _submit(ns)


def click_widget(goal, ns, page, memo):
    kind = quoted(goal)[0]
    bid = page.evaluate(
        "k => document.querySelector(`#area [data-type='${k}']`).getAttribute('bid')", kind
    )
    return f"click({bid!r})"


def navigate_tree(goal, ns, page, memo):
    """Deepest visible item on the path to the named one: the item itself, or a folder."""
    name = quoted(goal)[0]
    chain = page.evaluate(
        """n => { const li = [...document.querySelectorAll('#tree li')]
                   .find(e => e.querySelector(':scope > span').textContent === n);
                 const out = []; for (let e = li; e && e.id !== 'tree'; e = e.parentElement)
                   if (e.tagName === 'LI') out.unshift(e.getAttribute('bid'));
                 return out; }""",
        name,
    )
    shown = {n.bid for n in ns}
    visible = [b for b in chain if b in shown]
    if not visible:
        raise Unsolvable("no item on the path is shown")
    return f"click({visible[-1]!r})"


def search_engine(goal, ns, page, memo):
    query = quoted(goal)[0]
    k = int(re.search(r"click the (\d+)\w\w search result", goal).group(1))
    memo["i"] = memo.get("i", 0) + 1
    if memo["i"] == 1:
        return f"fill({first(ns, 'textbox').bid!r}, {query!r})"
    if memo["i"] == 2:
        return f"click({first(ns, 'button', 'Search').bid!r})"
    page_no = (k - 1) // 3 + 1
    if page_no > 1 and not memo.get("paged"):
        memo["paged"] = True
        return f"click({first(ns, 'link', str(page_no)).bid!r})"
    bid = page.evaluate(
        "i => document.querySelector(`#page-content a[data-result='${i}']`).getAttribute('bid')",
        k - 1,
    )
    return f"click({bid!r})"


def use_autocomplete(goal, ns, page, memo):
    start, *end = quoted(goal)
    memo["i"] = memo.get("i", 0) + 1
    box = first(ns, "textbox")
    if memo["i"] == 1:
        return f"fill({box.bid!r}, {start!r})"
    if memo["i"] == 2:
        for i, n in enumerate(ns):
            if n.role != "listitem" or not n.bid:
                continue
            below = (x for x in ns[i + 1 :] if x.depth > n.depth and x.role == "StaticText")
            name = n.name or next(below, n).name  # the item's text is a child line
            if name.lower().startswith(start.lower()) and (not end or name.endswith(end[0])):
                return f"click({n.bid!r})"
        raise Unsolvable("no suggestion")
    return _submit(ns)


def guess_number(goal, ns, page, memo):
    lo, hi = memo.setdefault("range", [0, 9])
    last = memo.get("last")
    feedback = " ".join(n.name for n in ns if n.role == "StaticText")
    if memo.get("filled"):
        memo["filled"] = False
        return _submit(ns)
    if last is not None:
        if "higher" in feedback:
            lo = last + 1
        elif "lower" in feedback:
            hi = last - 1
        memo["range"] = [lo, hi]
    guess = (lo + hi) // 2
    memo["last"], memo["filled"] = guess, True
    return f"fill({first(ns, 'spinbutton').bid!r}, {str(guess)!r})"


SOCIAL = {"Share via DM": "share", "Copy link to Tweet": "copy", "Embed Tweet": "embed",
          "Mute": "menu-user", "Block": "block-user", "Report": "report", "Reply": "reply",
          "Retweet": "retweet", "Like": "like"}  # fmt: skip


def social_media(goal, ns, page, memo):
    """The post's action icon; a menu item is clicked after opening the post's menu."""
    user, what = re.search(r"user (@\S+), click", goal).group(1), SOCIAL[quoted(goal)[-1]]
    bids = page.evaluate(
        """([u, w]) => { for (const m of document.querySelectorAll('.media')) {
             if (m.querySelector('.username').textContent.trim() !== u) continue;
             const item = m.querySelector('.' + w), more = m.querySelector('.more');
             return [item && item.getAttribute('bid'), more && more.getAttribute('bid')]; }
           return [null, null]; }""",
        [user, what],
    )
    shown = {n.bid for n in ns}
    for bid in bids:
        if bid in shown:
            return f"click({bid!r})"
    raise Unsolvable("neither the action nor its menu is in the tree")


ORACLES: dict[str, Oracle] = {
    "click-button": click_button,
    "unicode-test": click_button,
    "click-test": lambda g, ns, p, m: f"click({first(ns, 'button').bid!r})",
    "click-test-2": click_test_2,
    "click-button-sequence": click_button_sequence,
    "click-dialog": click_dialog,
    "click-dialog-2": click_dialog,
    "click-tab": click_tab,
    "click-checkboxes": click_checkboxes,
    "click-checkboxes-large": click_checkboxes,
    "click-checkboxes-transfer": click_checkboxes,
    "click-option": click_option,
    "choose-list": choose_list,
    "click-scroll-list": click_scroll_list,
    "enter-text": _fields_then_submit(lambda g, ns: [(first(ns, "textbox").bid, _text(g))]),
    "enter-text-2": _fields_then_submit(lambda g, ns: [(first(ns, "textbox").bid, _text(g))]),
    "enter-text-dynamic": _fields_then_submit(lambda g, ns: [(first(ns, "textbox").bid, _text(g))]),
    "focus-text": focus_text,
    "focus-text-2": focus_text,
    "login-user": _fields_then_submit(_login, "Login"),
    "enter-password": _fields_then_submit(_password),
    "read-table": _fields_then_submit(_read_table),
    "read-table-2": _fields_then_submit(_read_table_2),
    "find-word": _fields_then_submit(_find_word),
    "simple-arithmetic": _fields_then_submit(_arith),
    "simple-algebra": _fields_then_submit(_algebra),
    "copy-paste": _fields_then_submit(_copy_paste),
    "text-transform": _fields_then_submit(_text_transform),
    "use-spinner": _fields_then_submit(_spinner),
    "enter-date": _fields_then_submit(_enter_date),
    "enter-time": _fields_then_submit(_enter_time),
    "form-sequence-2": form_sequence_2,
    "buy-ticket": buy_ticket,
    "click-collapsible": click_collapsible,
    "click-widget": click_widget,
    "navigate-tree": navigate_tree,
    "search-engine": search_engine,
    "use-autocomplete": use_autocomplete,
    "guess-number": guess_number,
    "social-media": social_media,
}


# --- running BrowserGym ------------------------------------------------------------------


class _NoChat:
    """Stands in for BrowserGym's chat window (a second browser the oracle never reads)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.messages: list[dict] = []
        self.recording_start_time = None

    def add_message(self, role: str, msg: str) -> None:
        self.messages.append({"role": role, "message": msg, "timestamp": time.time()})

    def close(self) -> None:
        pass

    def wait_for_user_message(self) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(html: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    cmd = [sys.executable, "-m", "http.server", str(port), "-d", str(html), "-b", "127.0.0.1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/"
    for _ in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return proc, base


def _flatten(obs: dict, base: str) -> str:
    from browsergym.utils.obs import IGNORED_AXTREE_ROLES, flatten_axtree_to_str

    roles = [*IGNORED_AXTREE_ROLES, "InlineTextBox"]
    text = flatten_axtree_to_str(obs["axtree_object"], ignored_roles=roles)
    return text.replace(base, CANONICAL_BASE)


def _task_reward(env: Any) -> float:
    """MiniWoB's own reward. BrowserGym ends an episode with reward 0 when the page URL
    changed, which a click on a ``href="#"`` link does (search-engine's results) although
    the task rewarded it."""
    try:
        info = env.unwrapped.task._get_info()
    except Exception:
        return 0.0
    return float(info["RAW_REWARD_GLOBAL"]) if info["DONE_GLOBAL"] else 0.0


def run_episode(task: str, seed: int, env: Any, base: str) -> tuple[list[dict], str]:
    """The oracle's steps of one episode and why it ended ("ok" when the reward is 1)."""
    obs, _ = env.reset(seed=seed)
    page = env.unwrapped.page
    oracle, memo, steps = ORACLES[task], {}, []
    for _ in range(MAX_STEPS):
        goal, tree = obs["goal"], _flatten(obs, base)
        try:
            action = oracle(goal, nodes(tree), page, memo)
        except (Unsolvable, LookupError, AttributeError, ValueError) as e:
            return steps, f"oracle: {type(e).__name__}: {e}"
        url = str(obs.get("url") or page.url).replace(base, CANONICAL_BASE)
        steps.append({"goal": goal, "axtree_txt": tree, "url": url, "action": action,
                      "last_action_error": obs.get("last_action_error") or ""})  # fmt: skip
        obs, reward, terminated, truncated, _ = env.step(action)
        if obs.get("last_action_error"):
            return steps, f"action error: {obs['last_action_error'][:120]}"
        if terminated or truncated:
            return steps, "ok" if reward >= 1 or _task_reward(env) > 0 else f"reward {reward}"
    return steps, "too many steps"


def episode_rows(task: str, seed: int, steps: list[dict]) -> list[dict]:
    """Rows in the dataset schema (:data:`lrlib.data.dataset.COLUMNS`) for a verified episode."""
    from lrlib.core.axtree import parse
    from lrlib.core.tokens import count_tokens
    from lrlib.data.actions import parse_action
    from lrlib.data.evidence import evidence_groups

    episode, family = f"miniwob.{task}_{seed}", f"miniwob.{task}"
    rows, seen, history = [], {}, []
    for n, s in enumerate(steps):
        act = parse_action(s["action"])
        key = (s["goal"], s["axtree_txt"])
        if key in seen:  # the importer's rule: a repeated (goal, tree) pair is one row
            seen[key]["duplicate_steps"].append(n)
            history.append(act.canonical)
            continue
        tree = parse(s["axtree_txt"])
        bids = list(act.bids)
        row = {
            "step_id": f"{episode}/{n}", "episode": episode, "benchmark": "miniwob",
            "task": family, "family": family, "seed": seed, "step": n, "split": "ood",
            "goal": s["goal"], "url": s["url"], "axtree_txt": s["axtree_txt"],
            "action": act.canonical, "action_name": act.name, "action_bids": bids,
            "history": list(history),
            "target_lines": sorted({x for b in bids if (x := tree.line_of(b)) is not None}),
            "evidence_lines": evidence_groups(s["axtree_txt"], act.canonical, s["goal"]),
            "user_followups": [], "last_action_error": s["last_action_error"],
            "episode_reward": 1.0, "episode_success": True, "episode_error": None,
            "has_summary": False, "duplicate_steps": [],
            "source": f"browsergym-miniwob {family} seed={seed} step={n} (oracle, verified)",
            "n_lines": len(tree), "n_chars": len(s["axtree_txt"]),
            "n_tokens": count_tokens(s["axtree_txt"]),
        }  # fmt: skip
        rows.append(seen.setdefault(key, row))
        history.append(act.canonical)
    return rows


def _log(message: str) -> None:
    print(message, flush=True)


def build(
    tasks: list[str], seeds: int, log: Callable[[str], None] = _log
) -> tuple[list[dict], dict[str, str]]:
    """Run every task and seed; the rows of verified episodes and every episode's outcome."""
    import gymnasium as gym
    import miniwob

    html = Path(miniwob.__file__).parent / "html"
    proc, base = _serve(html)
    os.environ["MINIWOB_URL"] = base + "miniwob/"
    import browsergym.core.env as bgenv
    import browsergym.miniwob  # noqa: F401  (registers the tasks)
    from browsergym.core.action.highlevel import HighLevelActionSet

    bgenv.Chat = _NoChat
    actions = HighLevelActionSet(subsets=["bid", "nav"], strict=False, multiaction=False)
    rows, outcome = [], {}
    try:
        for task in tasks:
            env = gym.make(
                f"browsergym/miniwob.{task}", headless=True, action_mapping=actions.to_python_code,
                pw_chromium_kwargs={"executable_path": os.environ.get("CHROMIUM", "/usr/bin/chromium")},
            )  # fmt: skip
            try:
                for seed in range(seeds):
                    for _attempt in range(RETRIES + 1):
                        try:
                            steps, why = run_episode(task, seed, env, base)
                        except Exception as e:  # a browser failure loses an episode, not the run
                            steps, why = [], f"error: {type(e).__name__}: {str(e)[:120]}"
                        if "Timeout" not in why:  # BrowserGym's 500 ms action timeout on a busy CPU
                            break
                    outcome[f"{task}_{seed}"] = why
                    if why == "ok":
                        rows += episode_rows(task, seed, steps)
                    log(f"{task:28} seed {seed}: {why} ({len(steps)} steps)")
            finally:
                env.close()
    finally:
        proc.terminate()
        proc.wait()
    return rows, outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6, help="seeds 0..N-1 per task (default 6)")
    parser.add_argument("--tasks", default=",".join(ORACLES), help="comma-separated task names")
    parser.add_argument("-o", "--out", type=Path, default=OUT)
    parser.add_argument("--jobs", type=int, default=1, help="builds side by side (default 1)")
    args = parser.parse_args()
    from lrlib.data.dataset import COLUMNS, write_row_batches

    start = time.perf_counter()
    tasks = [t for t in args.tasks.split(",") if t]
    rows, outcome = [], {}
    if args.jobs > 1:  # browsers mostly wait: a few builds side by side, tasks dealt round-robin
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.jobs) as pool:
            parts = pool.map(build, [tasks[i :: args.jobs] for i in range(args.jobs)],
                             [args.seeds] * args.jobs)  # fmt: skip
            for part_rows, part_outcome in parts:
                rows += part_rows
                outcome.update(part_outcome)
        order = {t: i for i, t in enumerate(tasks)}
        rows.sort(key=lambda r: (order[r["task"][len("miniwob.") :]], r["seed"], r["step"]))
    else:
        rows, outcome = build(tasks, args.seeds)
    rows = [{c: r[c] for c in COLUMNS} for r in rows]
    kept = sum(v == "ok" for v in outcome.values())
    print(f"{len(rows)} steps from {kept}/{len(outcome)} verified episodes, "
          f"{len({r['family'] for r in rows})} task types, {time.perf_counter() - start:.0f} s")  # fmt: skip
    if rows:
        write_row_batches([rows], args.out)
        print(f"written: {args.out}")
    return 0 if rows else 1


if __name__ == "__main__":
    raise SystemExit(main())
