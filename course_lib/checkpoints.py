"""Checkpoints and results under ``runs/``: what one notebook trains, the next one reads.

    save_checkpoint(runs_dir() / "rnn" / "model.pt", model, config=cfg, vocabs={"src": sv, "tgt": tv})
    ckpt = load_checkpoint(runs_dir() / "rnn" / "model.pt", model)   # raises CheckpointError if unusable
    record_results("01_rnn_baselines", {"headline": {"name": "BLEU test", "value": 31.2}, "bleu_test": 31.2})
    read_results("01_rnn_baselines")   # the dict recorded above, or None
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

import torch

import course_lib
from course_lib.text import Vocab
from course_lib.train import pick_device


def runs_dir() -> Path:
    """Where checkpoints and results go, created on demand.

    ``$COURSE_RUNS_DIR`` when set; else ``runs/`` at the course root (the nearest ancestor of the
    working directory holding ``nbgrader_config.py``), so every notebook shares one folder
    wherever it runs from; else ``./runs``. The ``smoke`` profile uses ``runs/smoke/`` there: nbgrader's
    Validate button and ``course build``'s release check run notebooks in smoke, and their tiny
    models must not replace the ones a student (or ``course build``) trained in the real profile.
    """
    if os.environ.get("COURSE_RUNS_DIR"):
        path = Path(os.environ["COURSE_RUNS_DIR"])
    else:
        cwd = Path.cwd().resolve()
        root = next((d for d in (cwd, *cwd.parents) if (d / "nbgrader_config.py").is_file()), cwd)
        path = root / "runs" / ("smoke" if course_lib.profile() == "smoke" else "")
    path.mkdir(parents=True, exist_ok=True)
    return path


class CheckpointError(RuntimeError):
    """A checkpoint is missing, corrupt, or does not fit the model."""


# File layout: MAGIC, the SHA-256 (hex) of the payload, a newline, then the torch.save payload.
# The digest catches truncated or corrupted files before torch tries to unpickle them.
_MAGIC = b"COURSE_LIB_CHECKPOINT 1\n"


def save_checkpoint(path: str | Path, model: torch.nn.Module, *, config: Any = None,
                    vocabs: Mapping[str, Vocab] | None = None,
                    extra: Mapping[str, Any] | None = None) -> Path:
    """Write ``model``'s weights with their config, vocabularies and ``extra`` metadata, atomically.

    ``config`` is a dataclass or dict of plain values; ``extra`` must hold plain values too, so that
    ``torch.load(weights_only=True)`` can read the file back.
    """
    path = Path(path)
    payload = {
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "config": dataclasses.asdict(config) if dataclasses.is_dataclass(config) else dict(config or {}),
        "vocabs": {name: vocab.state_dict() for name, vocab in (vocabs or {}).items()},
        "extra": dict(extra or {}),
        "course_lib_version": course_lib.__version__,
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    try:  # fail now, not when the notebook that needs the file tries to read it
        torch.load(io.BytesIO(data), weights_only=True)
    except Exception as e:
        culprit = re.search(r"GLOBAL (\S+)", str(e))
        raise TypeError("config, vocabs and extra must hold plain Python values (str, int, float, "
                        f"list, dict, ...), not {culprit.group(1) if culprit else e}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(_MAGIC + hashlib.sha256(data).hexdigest().encode() + b"\n" + data)
    os.replace(tmp, path)  # readers see the old file or the complete new one, never half of it
    return path


def load_checkpoint(path: str | Path, model: torch.nn.Module | None = None,
                    map_location: str | torch.device = "cpu") -> dict:
    """Read a checkpoint written by ``save_checkpoint``, loading the weights into ``model`` if given.

    Returns ``{"state_dict", "config", "vocabs" (name -> Vocab), "extra", "course_lib_version"}``.
    Raises ``CheckpointError`` naming the file when it is missing, corrupt or does not fit ``model``.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such file — train the model first") from None
    header_len = len(_MAGIC) + 65  # 64 hex digits + newline
    if not raw.startswith(_MAGIC) or len(raw) < header_len:
        raise CheckpointError(f"{path}: not a course_lib checkpoint (or truncated); delete it and retrain")
    digest, data = raw[len(_MAGIC) : header_len - 1].decode("ascii", "replace"), raw[header_len:]
    if hashlib.sha256(data).hexdigest() != digest:
        raise CheckpointError(
            f"{path}: checksum mismatch — the file is corrupt or truncated; delete it and retrain")
    try:
        ckpt = torch.load(io.BytesIO(data), map_location=map_location, weights_only=True)
    except Exception as e:  # the digest matched, so the writer stored something torch cannot read
        raise CheckpointError(f"{path}: could not be read ({type(e).__name__}: {e})") from e
    ckpt["vocabs"] = {name: Vocab.from_state_dict(state) for name, state in ckpt["vocabs"].items()}
    if model is not None:
        _check_fits(path, ckpt["state_dict"], model)
        model.load_state_dict(ckpt["state_dict"])
    return ckpt


def _check_fits(path: Path, state: Mapping[str, torch.Tensor], model: torch.nn.Module) -> None:
    """Raise one ``CheckpointError`` listing every way ``state`` does not fit ``model``."""
    expected = model.state_dict()
    problems = []
    if missing := [k for k in expected if k not in state]:
        problems.append(f"missing {', '.join(missing[:5])}" + (" ..." if len(missing) > 5 else ""))
    if unexpected := [k for k in state if k not in expected]:
        problems.append(f"unexpected {', '.join(unexpected[:5])}" + (" ..." if len(unexpected) > 5 else ""))
    problems += [f"{k} has shape {tuple(state[k].shape)} in the file but {tuple(v.shape)} in the model"
                 for k, v in expected.items() if k in state and state[k].shape != v.shape]
    if problems:
        raise CheckpointError(
            f"{path}: does not fit the model ({'; '.join(problems)}) — it was trained "
            "with another configuration; delete it and retrain, or build the model to match")


def record_results(name: str, metrics: Mapping[str, Any]) -> Path:
    """Merge ``metrics`` into ``runs_dir()/name/results.json`` with a timestamp, profile and device."""
    path = runs_dir() / name / "results.json"
    results = read_results(name) or {}
    results.update(metrics)
    results.update(timestamp=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   profile=course_lib.profile(), device=pick_device().type)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    # default=float turns tensors and NumPy scalars into plain numbers.
    tmp.write_text(json.dumps(results, indent=2, sort_keys=True, default=float) + "\n")
    os.replace(tmp, path)
    return path


def read_results(name: str) -> dict | None:
    """The results recorded under ``name``, or None if there are none yet."""
    path = runs_dir() / name / "results.json"
    return json.loads(path.read_text()) if path.is_file() else None


__all__ = [
    "CheckpointError", "load_checkpoint", "read_results", "record_results", "runs_dir", "save_checkpoint"
]
