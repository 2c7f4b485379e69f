"""Training loop, device choice, checkpoints and results under ``runs/``.

    history = train(model, batches, loss_fn, optimizer, steps=2000, schedule=linear_warmup(200))
    save_checkpoint(runs_dir() / "rnn" / "model.pt", model, config=cfg, vocabs={"src": sv, "tgt": tv})
    record_results("01_rnn_baselines", {"headline": {"name": "BLEU test", "value": 31.2}, "bleu_test": 31.2})

``loss_fn(model, batch)`` returns the mean loss per token as a scalar tensor; ``batches`` is
re-iterable (one pass = one epoch), e.g. a ``course_lib.text.BucketedBatches``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import torch
from tqdm.auto import tqdm

import course_lib
from course_lib.text import Vocab


def pick_device(prefer: str | None = None) -> torch.device:
    """``prefer`` when given (e.g. ``"cpu"``), else CUDA, then Apple's MPS, then CPU."""
    if prefer:
        return torch.device(prefer)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


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


@dataclass
class TrainConfig:
    """The knobs of one training run; notebooks keep one per profile."""

    steps: int | None = None  # optimizer updates; None = until max_minutes runs out
    max_minutes: float | None = None  # wall-clock budget; None = until steps are done
    lr: float = 1e-3  # peak learning rate
    warmup: int = 0  # steps of linear LR warm-up (see linear_warmup)
    clip_norm: float | None = 1.0  # max global gradient norm; None = no clipping
    log_every: int = 10  # record loss / grad norm / speed every this many steps
    eval_every: int | None = None  # call on_eval every this many steps (and at the end)
    seed: int = 0  # for seed_everything and the batch order


@dataclass
class History:
    """What ``train`` recorded; ``step[i]`` is the update count at which ``loss[i]`` etc. were logged."""

    step: list[int] = field(default_factory=list)  # updates done when logged
    loss: list[float] = field(default_factory=list)  # mean training loss since the previous log
    grad_norm: list[float] = field(default_factory=list)  # mean gradient norm before clipping
    lr: list[float] = field(default_factory=list)  # learning rate of the first param group
    tokens_per_s: list[float] = field(default_factory=list)  # target tokens processed per second
    eval: list[dict] = field(default_factory=list)  # {"step": ..., **on_eval(model, step)}
    minutes: float = 0.0  # wall-clock time of the whole run


def linear_warmup(warmup: int) -> Callable[[int], float]:
    """LR multiplier rising linearly from ``1/warmup`` to 1 over ``warmup`` steps, then constant."""
    return lambda step: min(1.0, (step + 1) / warmup) if warmup > 0 else 1.0


def _to(batch: Any, device: torch.device) -> Any:
    """Move a batch (tensor, object with ``.to``, or tuple/list/dict of them) to ``device``."""
    if isinstance(batch, (tuple, list)):
        return type(batch)(_to(b, device) for b in batch)
    if isinstance(batch, dict):
        return {k: _to(v, device) for k, v in batch.items()}
    return batch.to(device) if hasattr(batch, "to") else batch


def _n_tokens(batch: Any) -> int:
    """Target tokens in a batch, counted on the CPU before the move (no GPU sync)."""
    if hasattr(batch, "n_target_tokens"):
        return batch.n_target_tokens
    first = batch[0] if isinstance(batch, (tuple, list)) else batch
    return first.numel() if isinstance(first, torch.Tensor) else 0


def train(model: torch.nn.Module, batches: Iterable, loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor],
          optimizer: torch.optim.Optimizer, *, steps: int | None = None, max_minutes: float | None = None,
          schedule: Callable[[int], float] | None = None, clip_norm: float | None = 1.0,
          device: torch.device | str | None = None, progress: bool = True,
          on_eval: Callable[[torch.nn.Module, int], dict] | None = None, eval_every: int | None = None,
          log_every: int = 10, autocast_dtype: torch.dtype | None = None) -> History:
    """Train ``model`` for ``steps`` updates or ``max_minutes`` (whichever ends first), epoch after epoch.

    Each update: ``loss = loss_fn(model, batch)``, backward, clip the global gradient norm to
    ``clip_norm``, ``optimizer.step()``. ``schedule(step)`` (``step`` = 0 for the first update)
    returns a *multiplier* of each param group's initial LR, as in ``torch.optim.lr_scheduler.LambdaLR``.
    ``on_eval(model, step)`` runs in eval mode under ``torch.no_grad()`` every ``eval_every`` updates
    and after the last one; it returns a dict of metrics. ``autocast_dtype=torch.bfloat16`` runs the
    forward pass in mixed precision. The model is moved to ``device`` (default ``pick_device()``)
    and left in eval mode.
    """
    if steps is None and max_minutes is None:
        raise ValueError("give steps or max_minutes (or both)")
    if autocast_dtype == torch.float16:
        raise ValueError("use torch.bfloat16: float16 would need a gradient scaler")
    device = torch.device(device) if device is not None else pick_device()
    model.to(device)
    for group in optimizer.param_groups:
        group.setdefault("initial_lr", group["lr"])  # the base that schedule() multiplies
    history = History()
    bar = tqdm(total=steps, disable=not progress, desc="train", unit="step")
    start = last_log = time.perf_counter()
    loss_sum = norm_sum = torch.zeros((), device=device)  # summed on device: one sync per log
    tokens = n_since_log = step = 0

    def evaluate() -> None:
        model.eval()
        with torch.no_grad():
            history.eval.append({"step": step, **on_eval(model, step)})
        model.train()
        bar.set_postfix_str(", ".join(f"{k} {v:.3g}" for k, v in history.eval[-1].items()
                                      if isinstance(v, float)))

    model.train()
    done = False
    while not done:
        empty_epoch = True
        for batch in batches:
            empty_epoch = False
            if schedule is not None:
                for group in optimizer.param_groups:
                    group["lr"] = group["initial_lr"] * schedule(step)
            tokens += _n_tokens(batch)
            batch = _to(batch, device)
            with torch.autocast(device.type, dtype=autocast_dtype or torch.bfloat16,
                                enabled=autocast_dtype is not None):
                loss = loss_fn(model, batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            # clip_grad_norm_ returns the norm *before* clipping; max_norm=inf only measures it.
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm or math.inf)
            optimizer.step()
            step += 1
            loss_sum = loss_sum + loss.detach().float()
            norm_sum = norm_sum + norm.detach().float()
            n_since_log += 1
            bar.update(1)

            out_of_time = max_minutes is not None and time.perf_counter() - start >= 60 * max_minutes
            done = out_of_time or (steps is not None and step >= steps)
            if step % log_every == 0 or done:
                now = time.perf_counter()
                history.step.append(step)
                history.loss.append(loss_sum.item() / n_since_log)
                history.grad_norm.append(norm_sum.item() / n_since_log)
                history.lr.append(optimizer.param_groups[0]["lr"])
                history.tokens_per_s.append(tokens / max(now - last_log, 1e-9))
                bar.set_description(f"loss {history.loss[-1]:.3f} | {history.tokens_per_s[-1]:,.0f} tok/s")
                loss_sum = norm_sum = torch.zeros((), device=device)
                tokens = n_since_log = 0
                last_log = now
            if on_eval is not None and (done or (eval_every and step % eval_every == 0)):
                evaluate()
            if done:
                break
        if empty_epoch:
            raise ValueError("batches yielded nothing: is the dataset empty?")
    bar.close()
    model.eval()
    history.minutes = (time.perf_counter() - start) / 60
    return history


class CheckpointError(RuntimeError):
    """A checkpoint is missing, corrupt, or does not fit the model."""


# File layout: MAGIC, the SHA-256 (hex) of the payload, a newline, then the torch.save payload.
# The digest catches truncated or corrupted files before torch tries to unpickle them.
_MAGIC = b"COURSE_LIB_CHECKPOINT 1\n"


def save_checkpoint(path: str | Path, model: torch.nn.Module, *, config: Any = None,
                    vocabs: Mapping[str, Vocab] | None = None, extra: Mapping[str, Any] | None = None) -> Path:
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
        raise CheckpointError(f"{path}: checksum mismatch — the file is corrupt or truncated; delete it and retrain")
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
        raise CheckpointError(f"{path}: does not fit the model ({'; '.join(problems)}) — it was trained "
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


if __name__ == "__main__":  # torchrun --nproc_per_node=N -m course_lib.train --model transformer --steps 1000
    from course_lib.distributed import main

    raise SystemExit(main())
