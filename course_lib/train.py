"""The training loop, its time estimate, and device choice.

    print(estimate_time(model, batches, loss_fn, optimizer, steps=2000))   # "about 3.1 min on this machine
    ..."
    history = train(model, batches, loss_fn, optimizer, steps=2000, schedule=linear_warmup(200))
    with eval_mode(model):   # dropout off, restored on exit even if the body raises
        ...

Training is counted in updates: ``steps`` fixes the run, and with it the schedule and the result,
however fast or busy the machine. Its speed changes only the time, which ``estimate_time``
measures on a copy before the run and the progress bar shows as its ETA. ``max_minutes`` is a
safety net, off unless given: when hit, the run stops and says so in one line (``History.stopped_early``).

``loss_fn(model, batch)`` returns the mean loss per token as a scalar tensor; ``batches`` is
re-iterable (one pass = one epoch), e.g. a ``course_lib.text.BucketedBatches``. Checkpoints and
results under ``runs/`` are ``course_lib.checkpoints``; the data-parallel entry point
(``torchrun -m course_lib.distributed``) is ``course_lib.distributed``.
"""
from __future__ import annotations

import contextlib
import copy
import itertools
import math
import sys
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


Clock = Callable[[], float]  # seconds from an arbitrary origin, e.g. time.perf_counter


@dataclass
class History:
    """What ``train`` recorded; ``step[i]`` is the update count at which ``loss[i]`` etc. were logged.

    ``step``, ``loss``, ``grad_norm``, ``lr`` and ``eval`` are the run's result: they depend on the
    seed, the data and ``steps``, not on the machine's speed or load (another thread count or CPU
    can change the last digits of the arithmetic). ``tokens_per_s`` and ``minutes`` measure this machine's
    speed.
    """

    step: list[int] = field(default_factory=list)  # updates done when logged
    loss: list[float] = field(default_factory=list)  # mean training loss since the previous log
    grad_norm: list[float] = field(default_factory=list)  # mean gradient norm before clipping
    lr: list[float] = field(default_factory=list)  # learning rate of the first param group
    tokens_per_s: list[float] = field(default_factory=list)  # measured: target tokens processed per second
    eval: list[dict] = field(default_factory=list)  # {"step": ..., **on_eval(model, step)}
    minutes: float = 0.0  # measured: wall-clock time of the whole run
    # the line saying why the run ended before ``steps`` (the safety net), or None
    stopped_early: str | None = None


@dataclass(frozen=True)
class TimeEstimate:
    """How long ``updates`` updates take on this machine, from a short probe measured just now."""

    updates: int  # the run's updates
    seconds_per_update: float  # mean over the probe's timed updates
    probe_updates: int  # updates timed (after one untimed warm-up)

    @property
    def minutes(self) -> float:
        return self.updates * self.seconds_per_update / 60

    def __str__(self) -> str:
        return (f"{self.updates} updates: about {self.minutes:.1f} min on this machine as it is now "
                f"({1000 * self.seconds_per_update:.0f} ms per update over {self.probe_updates} timed ones); "
                "a slower or busier machine takes longer for the same result")


def time_updates(update: Callable[[int], Any], updates: int, *, probe_updates: int = 8,
                 device: torch.device | str = "cpu", clock: Clock = time.perf_counter) -> TimeEstimate:
    """Estimate ``updates`` updates from a probe: ``update(i)`` once untimed (the first call pays one-off
    costs: allocation, compilation), then ``probe_updates`` times, timed: their mean seconds per update.

    ``update`` must wait for its device (e.g. end with ``.item()``) and touch only copies: the random
    generators of the CPU and of ``device`` are restored afterwards, so the probe leaves no trace.
    """
    if probe_updates < 1:
        raise ValueError("time at least one update")
    device = torch.device(device)
    with torch.random.fork_rng(devices=[] if device.type == "cpu" else [device],
                               device_type=None if device.type == "cpu" else device.type):
        update(0)
        start = clock()
        for i in range(1, probe_updates + 1):
            update(i)
        seconds = clock() - start
    return TimeEstimate(updates, seconds / probe_updates, probe_updates)


def safety_net_message(max_minutes: float, step: int, steps: int, minutes: float) -> str:
    """The one line a run stopped by its time limit prints: what happened, and what fits this machine."""
    needed = minutes * steps / max(step, 1)
    return (
        f"stopped by the {max_minutes:g}-minute safety net after {step} of {steps} updates: this is not the "
        f"{steps}-update result. This machine needs about {needed:.0f} min for all of them: allow that much "
        "(max_minutes; `course train --minutes`), or choose a profile with fewer updates "
        "(COURSE_PROFILE=smoke)"
    )


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


def _update(model: torch.nn.Module, batch: Any, loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor],
            optimizer: torch.optim.Optimizer, clip_norm: float | None, device: torch.device,
            autocast_dtype: torch.dtype | None) -> tuple[torch.Tensor, torch.Tensor]:
    """One update on ``batch`` (already on ``device``): (loss, gradient norm before clipping), on device."""
    with torch.autocast(device.type, dtype=autocast_dtype or torch.bfloat16, enabled=autocast_dtype
                        is not None):
        loss = loss_fn(model, batch)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    # clip_grad_norm_ returns the norm *before* clipping; max_norm=inf only measures it.
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm or math.inf)
    optimizer.step()
    return loss, norm


def _check_autocast(autocast_dtype: torch.dtype | None) -> None:
    if autocast_dtype == torch.float16:
        raise ValueError("use torch.bfloat16: float16 would need a gradient scaler")


def estimate_time(model: torch.nn.Module, batches: Iterable,
                  loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor], optimizer: torch.optim.Optimizer,
                  *, steps: int, probe_updates: int = 8, clip_norm: float | None = 1.0,
                  device: torch.device | str | None = None, autocast_dtype: torch.dtype | None = None,
                  clock: Clock = time.perf_counter) -> TimeEstimate:
    """How long ``train`` with these arguments will take for ``steps`` updates on this machine.

    Times updates of a *copy* of ``model`` and ``optimizer`` on the first batches of a shallow copy of
    ``batches`` (``time_updates``): the model, the optimizer, the random generators and the batch
    order (the pass counter of a ``BucketedBatches`` or ``ShiftBatches`` lives on the copy) stay as
    they were, so the run that follows is the one it would have been without the probe. Evaluations
    are not included.
    """
    _check_autocast(autocast_dtype)
    device = torch.device(device) if device is not None else pick_device()
    probe_model, probe_optimizer = copy.deepcopy(
        (model, optimizer))  # one copy: the optimizer keeps its parameters
    probe_model.to(device).train()
    sample = [_to(batch, device) for batch in itertools.islice(iter(copy.copy(batches)), probe_updates + 1)]
    if not sample:
        raise ValueError("batches yielded nothing: is the dataset empty?")
    return time_updates(
        lambda i: _update(probe_model, sample[i % len(sample)], loss_fn, probe_optimizer, clip_norm, device,
                          autocast_dtype)[0].item(),  # .item(): wait for the device
        steps,
        probe_updates=probe_updates,
        device=device,
        clock=clock)


def train(model: torch.nn.Module, batches: Iterable, loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor],
          optimizer: torch.optim.Optimizer, *, steps: int, max_minutes: float | None = None,
          schedule: Callable[[int], float] | None = None, clip_norm: float | None = 1.0,
          device: torch.device | str | None = None, progress: bool = True,
          on_eval: Callable[[torch.nn.Module, int], dict] | None = None, eval_every: int | None = None,
          log_every: int = 10, autocast_dtype: torch.dtype | None = None,
          clock: Clock = time.perf_counter) -> History:
    """Train ``model`` for ``steps`` updates, epoch after epoch.

    Each update: ``loss = loss_fn(model, batch)``, backward, clip the global gradient norm to
    ``clip_norm``, ``optimizer.step()``. ``schedule(step)`` (``step`` = 0 for the first update)
    returns a *multiplier* of each param group's initial LR, as in ``torch.optim.lr_scheduler.LambdaLR``.
    ``on_eval(model, step)`` runs in eval mode under ``torch.no_grad()`` every ``eval_every`` updates
    and after the last one; it returns a dict of metrics. ``autocast_dtype=torch.bfloat16`` runs the
    forward pass in mixed precision. The model is moved to ``device`` (default ``pick_device()``)
    and left in eval mode.

    ``clock`` only measures (tokens/s, minutes, the progress bar's rate): the result depends on the
    seed, the data and ``steps`` alone. ``max_minutes`` is an optional safety net: when the run has
    taken that long it stops, prints one line saying so and what fits this machine, and records that
    line in ``History.stopped_early``.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, not {steps}")
    _check_autocast(autocast_dtype)
    device = torch.device(device) if device is not None else pick_device()
    model.to(device)
    for group in optimizer.param_groups:
        group.setdefault("initial_lr", group["lr"])  # the base that schedule() multiplies
    history = History()
    bar = tqdm(total=steps, disable=not progress, desc="train", unit="step")
    start = last_log = clock()
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
            loss, norm = _update(model, _to(batch, device), loss_fn, optimizer, clip_norm, device,
                                 autocast_dtype)
            step += 1
            loss_sum = loss_sum + loss.detach().float()
            norm_sum = norm_sum + norm.detach().float()
            n_since_log += 1
            bar.update(1)

            if step < steps and max_minutes is not None and clock() - start >= 60 * max_minutes:
                history.stopped_early = safety_net_message(max_minutes, step, steps, (clock() - start) / 60)
            done = step >= steps or history.stopped_early is not None
            if step % log_every == 0 or done:
                now = clock()
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
    history.minutes = (clock() - start) / 60
    if history.stopped_early:
        print(history.stopped_early, file=sys.stderr)
    return history


__all__ = ["Clock", "History", "TimeEstimate", "eval_mode", "estimate_time", "linear_warmup", "pick_device",
           "safety_net_message", "time_updates", "train"]
