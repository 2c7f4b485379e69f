"""The training loop and device choice.

    history = train(model, batches, loss_fn, optimizer, steps=2000, schedule=linear_warmup(200))
    with eval_mode(model):   # dropout off, restored on exit even if the body raises
        ...

``loss_fn(model, batch)`` returns the mean loss per token as a scalar tensor; ``batches`` is
re-iterable (one pass = one epoch), e.g. a ``course_lib.text.BucketedBatches``. Checkpoints and
results under ``runs/`` are ``course_lib.checkpoints``; the data-parallel entry point
(``torchrun -m course_lib.distributed``) is ``course_lib.distributed``.
"""
from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import torch
from tqdm.auto import tqdm


def pick_device(prefer: str | None = None) -> torch.device:
    """``prefer`` when given (e.g. ``"cpu"``), else CUDA, then Apple's MPS, then CPU."""
    if prefer:
        return torch.device(prefer)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


@contextlib.contextmanager
def eval_mode(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """``model`` in eval mode (no dropout) inside the ``with`` block, back in its previous mode after it.

    The previous mode is restored even when the block raises or is interrupted, so a decode stopped
    halfway never leaves a model that the next training cell would train without dropout.
    """
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


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
        with eval_mode(model), torch.no_grad():
            history.eval.append({"step": step, **on_eval(model, step)})
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


__all__ = ["History", "eval_mode", "linear_warmup", "pick_device", "train"]
