"""Jupyter server settings of this repository (``make lab`` adds this folder to
``JUPYTER_CONFIG_PATH``): using a notebook never changes the files the repository tracks.

The committed ``notebooks/NN_name.ipynb`` are the runs of ``make figures`` (policy in
notebooks/README.md). When JupyterLab saves one of them (autosave included):

- widget state is never written (it is a random model id per run, useless without a kernel);
- if its cells' sources are those of the file on disk, only outputs changed: the committed
  notebook stays as it is, and your run is saved to ``.lrlib/lab/NN_name.ipynb`` (gitignored);
- if you edited a cell, it is saved (and jupytext writes the paired ``.py``, without a
  metadata header: notebooks/jupytext.toml); regenerate it with
  ``python -m lrlib figures --only NN`` before committing.

Other notebooks (your own) are saved as usual, minus widget state.

The kernels it starts write figures and tables to ``.lrlib/figures/`` (gitignored), not to
``figures/``, which holds what ``make figures`` produced: set ``LRLIB_FIGURES_DIR`` before
``make lab`` to choose another folder.
"""

import json
import os
import re
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAIRED = re.compile(r"^\d\d_.+\.ipynb$")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _user_area() -> Path:
    work = os.environ.get("LRLIB_WORK_DIR", "").strip()
    return (Path(work).expanduser() if work else REPO / ".lrlib") / "lab"


def _sources(nb: dict) -> list:
    return [(c.get("cell_type"), _text(c.get("source", ""))) for c in nb.get("cells", [])]


def _text(source) -> str:
    return ("".join(source) if isinstance(source, list) else source).strip()


def _drop_widget_state(nb: dict) -> None:
    nb.get("metadata", {}).pop("widgets", None)
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) or []:
            data = out.get("data") or {}
            if WIDGET_VIEW in data and "text/plain" in data:
                del data[WIDGET_VIEW]


def keep_committed_runs(model, path, contents_manager, **kwargs):
    """``pre_save_hook``: see the module docstring."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    content = model["content"]
    _drop_widget_state(content)
    os_path = Path(contents_manager._get_os_path(path))
    if not PAIRED.match(os_path.name) or not os_path.with_suffix(".py").is_file():
        return
    try:
        on_disk = json.loads(os_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if _sources(on_disk) != _sources(content):
        return  # an edit: save it
    copy = _user_area() / os_path.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    model["content"] = on_disk  # only outputs changed: the committed run stays


if not os.environ.get("LRLIB_FIGURES_DIR", "").strip():  # kernels inherit the server's env
    os.environ["LRLIB_FIGURES_DIR"] = str(_user_area().parent / "figures")
c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)
c.ContentsManager.pre_save_hook = keep_committed_runs
# jupytext rebuilds the contents manager with the same settings: not an override to report
warnings.filterwarnings("ignore", message="Overriding existing pre_save_hook")
