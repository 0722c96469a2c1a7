"""LLM layer speed: concurrency against a slow endpoint, a cache-hit rerun of the dataset,
and the embedded model against its own limit.

1. A local OpenAI-compatible test server (a real HTTP server) that takes 200 ms per call:
   the same requests sequentially and 8 at a time. Target: 8-way >= 6x faster.
2. LineRetriever (paper prompt, compact view) over every step of the shipped dataset: a
   first pass against the test server fills a temporary cache; the timed rerun is
   ``offline=True`` (no endpoint at all), in-process and as the ``lrlib run`` command.
   Target: < 5 s.
3. ``--embedded``: ``lrlib run --default-steps --limit N --refresh`` on the embedded
   SmolLM2 (answers into a temporary cache; ``--checkout`` runs another checkout's code,
   e.g. main, for a before/after on one machine): wall time and median seconds per answer.
   Then the same requests, one at a time, to a server with the threads that run chose,
   against the model's own limit on this machine: llama.cpp's ``/completion`` on a prompt
   of the same length, no prompt cache, with the same threads; prefill and decode tokens/s
   from the server's own ``timings``. Target: the pipeline's prefill within 1.5x of the
   limit.
4. ``--variant N``: a prompt variant tried against a server that stays up (``lrlib serve``,
   or the kernel's shared server in a notebook): ``lrlib run --default-steps --limit N
   --refresh`` with the paper prompt (the first pass over these steps), then with a variant
   of yours (a ``--prompts`` file deriving a new guidance from ``paper``), both against one
   embedded server; beside them the same variant run by ``lrlib run`` starting its own
   server (what every run did before). Median seconds per answer of each, and the prompt
   tokens llama.cpp took from its prompt cache (``cache_n`` of its ``timings``). The
   variant's instructions come after the page, so everything before them is cached.

    .venv/bin/python benchmarks/bench_llm.py
    .venv/bin/python benchmarks/bench_llm.py --embedded 2 [--checkout ../main]
    .venv/bin/python benchmarks/bench_llm.py --variant 2
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from lrlib.data.dataset import load_steps
from lrlib.llm.cache import ResponseCache
from lrlib.llm.client import LLMClient
from lrlib.reducers.lineretriever import LineRetriever

LATENCY = 0.2
N_CALLS = 48
CONFIG = {"view": "compact", "think": False}  # as `lrlib run --view compact --no-think`
DEAD = "http://127.0.0.1:9/v1"  # nothing listens here: replays must not need the endpoint


def handler(delay: float) -> Callable[[Request], Response]:
    """A chat endpoint that answers every request after ``delay`` seconds."""
    message = {"role": "assistant", "content": "<answer>[(1, 40)]</answer>"}
    body = json.dumps(
        {
            "id": "bench",
            "object": "chat.completion",
            "created": 0,
            "model": "bench",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 8},
        }
    )

    def answer(request: Request) -> Response:
        time.sleep(delay)
        return Response(body, content_type="application/json")

    return answer


def timed_calls(url: str, concurrency: int) -> float:
    client = LLMClient("bench", base_url=url, cache=False, concurrency=concurrency)
    reqs = [client.request([{"role": "user", "content": f"q{i}"}]) for i in range(N_CALLS)]
    start = time.perf_counter()
    out = client.complete_many(reqs)
    elapsed = time.perf_counter() - start
    assert not [o for o in out if isinstance(o, Exception)]
    return elapsed


def _timings(server, body: dict, path: str = "/v1/chat/completions") -> dict:
    """The llama.cpp server's own ``timings`` (and usage) of one request."""
    import urllib.request

    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {server.api_key}"}
    req = urllib.request.Request(server.address + path, json.dumps(body).encode(), headers)
    with urllib.request.urlopen(req, timeout=1800) as resp:
        out = json.loads(resp.read())
    return {**out["timings"], "usage": out.get("usage")}


def embedded(limit: int, checkout: Path, against_limit: bool = True) -> list[tuple[str, str]]:
    """Section 3 of the docstring: the embedded model, the pipeline against its limit."""
    import pandas as pd

    from lrlab.server import MODEL_ID, EmbeddedServer, measured_speed
    from lrlib.reducers.lineretriever import RetrieverConfig
    from lrlib.report.run import default_steps

    rows = [("load average (1 min) before", f"{os.getloadavg()[0]:.1f}")]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.csv"
        cmd = [sys.executable, "-m", "lrlib", "run", "--default-steps", "--limit", str(limit)]
        cmd += ["--refresh", "--no-progress", "--cache-dir", str(Path(tmp) / "llm"), "-o", str(out)]
        env = {
            k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY")
        }
        env["LRLIB_OFFLINE"] = "0"
        import resource

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if done.returncode:
            raise SystemExit(f"lrlib run failed:\n{done.stdout}\n{done.stderr}")
        frame = pd.read_csv(out)
    plan = next(
        (ln for ln in done.stderr.splitlines() + done.stdout.splitlines() if "answers from" in ln),
        "",
    )
    lat = frame["llm_latency_s"].tolist()
    rows += [
        (f"`lrlib run --default-steps --limit {limit} --refresh` ({checkout.name}), wall", f"{wall:.1f} s"),
        ("its plan line", plan.strip()),
        ("seconds per answer (each)", ", ".join(f"{x:.1f}" for x in lat)),
        ("**median seconds per answer**", f"**{statistics.median(lat):.1f}**"),
        ("CPU seconds of the whole command (load-independent), per answer", f"{cpu:.1f}, {cpu / len(lat):.1f}"),
        ("prompt / completion tokens (each)", ", ".join(
            f"{p}/{c}" for p, c in zip(frame["prompt_tokens"], frame["completion_tokens"], strict=True))),
    ]  # fmt: skip
    if not against_limit:
        return rows
    speed = measured_speed()
    threads = int(speed["threads"]) if speed else None
    retriever_steps = default_steps(limit)
    from lrlib.reducers.lineretriever import LineRetriever

    r = LineRetriever(RetrieverConfig(answer="json"), cache=False)
    with EmbeddedServer(parallel=1, threads=threads) as server:
        pipe, limit_pp, limit_tg = [], [], []
        for step in retriever_steps:
            req = r.request(step)
            body = {"model": MODEL_ID, "messages": list(req.messages), **req.params}
            t = _timings(server, body)
            pipe.append(
                (t["prompt_n"], t["prompt_per_second"], t["predicted_n"], t["predicted_per_second"])
            )
            text = "\n".join(m["content"] for m in req.messages)  # same length, no template
            raw = _timings(server, {"prompt": text, "n_predict": 64, "ignore_eos": True,
                                    "cache_prompt": False, "temperature": 0}, "/completion")  # fmt: skip
            limit_pp.append(raw["prompt_per_second"])
            limit_tg.append(raw["predicted_per_second"])
        used = server.threads
    pp = statistics.median(p[1] for p in pipe)
    rows += [
        (f"same requests one at a time, {used} thread(s): prompt tokens", ", ".join(str(p[0]) for p in pipe)),
        ("pipeline prefill tokens/s (server timings, median)", f"{pp:.1f}"),
        ("pipeline decode tokens/s (median)", f"{statistics.median(p[3] for p in pipe):.1f}"),
        ("model's own limit: prefill tokens/s (same length, no cache)", f"{statistics.median(limit_pp):.1f}"),
        ("model's own limit: decode tokens/s (64 tokens)", f"{statistics.median(limit_tg):.1f}"),
        ("**limit / pipeline prefill** (target <= 1.5)", f"**{statistics.median(limit_pp) / pp:.2f}**"),
        ("measured threads (lrlib's speed file)", json.dumps(speed.get("trials")) if speed else "none"),
        ("load average (1 min) after", f"{os.getloadavg()[0]:.1f}"),
    ]  # fmt: skip
    return rows


VARIANT = """from lrlib import get_prompt, register_prompt

register_prompt(get_prompt("paper").derive("bench-variant", guidance=(
    "Select the lines the agent needs for its very next action: the element it will act on,"
    " its label, and any value the goal asks it to read or copy.")), overwrite=True)
"""


def _run(args: list[str], env: dict[str, str], tmp: Path, name: str) -> tuple[list[float], str]:
    """``lrlib run ARGS --refresh`` into a fresh cache: seconds per answer and the plan line."""
    import pandas as pd

    out = tmp / f"{name}.csv"
    cmd = [sys.executable, "-m", "lrlib", "run", *args, "--refresh", "--no-progress"]
    cmd += ["--cache-dir", str(tmp / f"llm-{name}"), "-o", str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"lrlib run failed:\n{done.stdout}\n{done.stderr}")
    lines = done.stderr.splitlines() + done.stdout.splitlines()
    plan = next((ln for ln in lines if "answers from" in ln), "")
    return pd.read_csv(out)["llm_latency_s"].tolist(), plan.strip()


def variant(limit: int) -> list[tuple[str, str]]:
    """Section 4 of the docstring: a prompt variant against a server that stays up."""
    from lrlab.server import MODEL_ID, EmbeddedServer, measured_speed
    from lrlib.reducers.lineretriever import RetrieverConfig
    from lrlib.report.run import default_steps

    rows = [("load average (1 min) before", f"{os.getloadavg()[0]:.1f}")]
    speed = measured_speed()
    base = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    steps = ["--default-steps", "--limit", str(limit)]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        prompts = tmp / "my_prompts.py"
        prompts.write_text(VARIANT)
        mine = ["--prompts", str(prompts), "--prompt", "bench-variant"]
        own, _ = _run(steps + mine, {**base, "LRLIB_OFFLINE": "0"}, tmp, "own-server")
        with EmbeddedServer(threads=int(speed["threads"]) if speed else None) as server:
            env = {**base, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": server.api_key,
                   "LRLIB_MODEL": MODEL_ID}  # fmt: skip
            first, _ = _run(steps, env, tmp, "first-pass")
            again, plan = _run(steps + mine, env, tmp, "variant")
            exec(VARIANT, {})  # the variant, registered in this process too
            r = LineRetriever(RetrieverConfig(prompt="bench-variant"), cache=False)
            cached = []
            for step in default_steps(limit):  # the same requests once more: what was cached
                req = r.request(step)
                t = _timings(
                    server, {"model": MODEL_ID, "messages": list(req.messages), **req.params}
                )
                cached.append(f"{t['cache_n']}/{t['cache_n'] + t['prompt_n']}")
    med = statistics.median
    rows += [
        ("variant, `lrlib run` starting its own server (as before), s per answer", ", ".join(f"{x:.1f}" for x in own)),
        ("first pass (paper prompt) against one served model, s per answer", ", ".join(f"{x:.1f}" for x in first)),
        ("the variant after it, same server, s per answer", ", ".join(f"{x:.1f}" for x in again)),
        ("its plan line", plan),
        ("**median s per answer: own server / first pass / variant**", f"**{med(own):.1f} / {med(first):.1f} / {med(again):.1f}**"),
        ("**variant speed-up over its own-server run**", f"**{med(own) / med(again):.1f}x**"),
        ("prompt tokens from the cache / all, the variant's requests repeated", ", ".join(cached)),
        ("load average (1 min) after", f"{os.getloadavg()[0]:.1f}"),
    ]  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedded", type=int, default=0, metavar="N",
                        help="only section 3, with N default steps")  # fmt: skip
    parser.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--no-limit", action="store_true", help="section 3: the run only")
    parser.add_argument("--variant", type=int, default=0, metavar="N",
                        help="only section 4, with N default steps")  # fmt: skip
    args = parser.parse_args()
    if args.variant:
        _print(variant(args.variant))
        return
    if args.embedded:
        _print(embedded(args.embedded, args.checkout, not args.no_limit))
        return
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = HTTPServer(threaded=True)
    server.start()
    url = server.url_for("/v1")
    rows = []
    try:
        server.expect_request("/v1/chat/completions").respond_with_handler(handler(LATENCY))
        seq, par = timed_calls(url, 1), timed_calls(url, 8)
        ms = f"{LATENCY * 1000:.0f} ms"
        rows += [
            (f"{N_CALLS} calls of {ms}, sequential", f"{seq:.2f} s"),
            (f"{N_CALLS} calls of {ms}, 8-way concurrency", f"{par:.2f} s"),
            ("speedup (target >= 6x)", f"{seq / par:.1f}x"),
        ]

        server.clear()
        server.expect_request("/v1/chat/completions").respond_with_handler(handler(0.0))
        steps = load_steps()
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "llm"
            fill = LLMClient("bench", base_url=url, cache=ResponseCache(root), concurrency=16)
            LineRetriever(client=fill, **CONFIG).reduce_many(steps)

            start = time.perf_counter()
            replay = LLMClient("bench", base_url=DEAD, cache=ResponseCache(root), offline=True)
            out = LineRetriever(client=replay, **CONFIG).reduce_many(steps)
            warm = time.perf_counter() - start
            assert all(r.usage["from_cache"] and r.failure is None for r in out)

            out_csv = str(Path(tmp) / "run.csv")
            cmd = [sys.executable, "-m", "lrlib", "run", "--offline", "--no-progress"]
            cmd += ["--model", "bench", "--base-url", DEAD, "--cache-dir", str(root)]
            cmd += ["--view", "compact", "--no-think", "--max-tokens", "512", "-o", out_csv]
            start = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            cli = time.perf_counter() - start
            size = sum(p.stat().st_size for p in root.rglob("*.json"))
        rows += [
            (f"cache-hit rerun, {len(steps)} steps, in-process (target < 5 s)", f"{warm:.2f} s"),
            ("same, `lrlib run --offline` (process start included)", f"{cli:.2f} s"),
            ("cache: entries, bytes per entry", f"{len(out)}, {size // len(out)}"),
        ]
    finally:
        server.stop()
    _print(rows)


def _print(rows: list[tuple[str, str]]) -> None:
    print("| measure | value |\n|---|---:|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
