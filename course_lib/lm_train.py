"""Training a language model: AdamW groups, the cosine schedule, one step, and the loop (notebook 07).

    optimizer = configure_optimizer(model, lr=3e-3, weight_decay=0.1)
    for step in range(total):
        for group in optimizer.param_groups:
            group["lr"] = cosine_lr(step, max_lr, warmup, total, min_lr)
        loss = train_step(model, random_windows(train_ids, B, T), optimizer, clip=1.0)

``train_lm`` runs that loop for a number of updates, with a progress bar (its ETA is this machine's)
and the validation loss on fixed windows every ``eval_every`` steps; ``estimate_lm_time`` says how
long it will take before it starts. With ``checkpoint=path`` it saves everything the run needs to go
on (weights, AdamW's moments, the batch sampler's and dropout's random states, the step, the history)
when it stops, after
``stop_after`` updates or at the end; ``resume=True`` continues from that file, and the continued run
is bit-for-bit the run that never stopped. The result depends on the config and the seed, not on the machine's
speed
(the same arithmetic gives the same numbers; another thread count or CPU can change their last digits).
"""
from __future__ import annotations

import copy
import dataclasses
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from course_lib.shakespeare import random_windows
from course_lib.train import Clock, TimeEstimate, eval_mode, safety_net_message, time_updates


def configure_optimizer(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW with two groups: weight decay on the matrices of linear layers; none on norms, biases and
    embeddings (a tied output matrix is the embedding: not decayed). Each parameter appears once."""
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    decay, no_decay = [], []
    for p in model.parameters():                      # parameters() yields a shared (tied) tensor once
        if not p.requires_grad:
            continue
        (decay if p.dim() >= 2 and id(p) not in embeddings else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))


def cosine_lr(step: int, max_lr: float, warmup: int, total: int, min_lr: float) -> float:
    """Linear warm-up over steps 0..warmup-1 to max_lr ((step + 1)/warmup of it), then a half cosine
    from max_lr (at step = warmup) down to min_lr (at step = total), and min_lr after that."""
    if step < warmup:
        return max_lr * (step + 1) / warmup
    if step >= total:
        return min_lr
    progress = (step - warmup) / max(1, total - warmup)                  # 0 -> 1
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (max_lr - min_lr)


def train_step(model: nn.Module, batch, optimizer: torch.optim.Optimizer, clip: float | None = 1.0) -> float:
    """One update: zero the gradients, forward, mean cross-entropy over (B, T), backward, clip the
    global gradient norm to ``clip`` (None or 0: no clipping), step. Returns the loss as a float."""
    x, y = batch                                                          # (B, T) each
    optimizer.zero_grad(set_to_none=True)
    logits = model(x)                                                     # (B, T, V)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
    loss.backward()
    if clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()


@torch.no_grad()
def estimate_loss(model: nn.Module, data: torch.Tensor, context: int, batch_size: int = 32,
                  n_batches: int = 10, seed: int = 1234) -> float:
    """Mean cross-entropy (nats per token) on ``n_batches`` windows drawn with a fixed seed."""
    g = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    total = 0.0
    with eval_mode(model):
        for _ in range(n_batches):
            x, y = random_windows(data, batch_size, context, g)
            logits = model(x.to(device))
            total += F.cross_entropy(logits.flatten(0, 1).float(), y.to(device).flatten()).item()
    return total / n_batches


@dataclass
class LMTrainConfig:
    steps: int = 2000                 # optimizer updates (the schedule's total)
    batch_size: int = 32              # windows per batch
    context: int = 128                # tokens per window (T)
    max_lr: float = 3e-3              # peak learning rate
    min_lr: float = 3e-4              # final learning rate of the cosine
    warmup: int = 100                 # linear warm-up steps
    weight_decay: float = 0.1         # AdamW decay on matrices
    clip: float = 1.0                 # global gradient-norm clip
    eval_every: int = 250             # validation every this many steps (and at the end)
    eval_batches: int = 10            # validation windows = eval_batches × batch_size
    # safety net, off by default: stop, saying so, after this much training time
    max_minutes: float | None = None
    seed: int = 0                     # seeds the batch sampler


@dataclass
class LMHistory:
    step: list[int] = field(default_factory=list)          # steps at which the losses below were taken
    train_loss: list[float] = field(default_factory=list)  # training loss (mean since the last record)
    valid_loss: list[float] = field(default_factory=list)  # validation loss on fixed windows
    seconds: list[float] = field(
        default_factory=list)  # measured: wall time since the start (evaluation excluded)
    tokens_per_s: float = 0.0  # measured: training tokens per second over the run
    stopped_early: str | None = None  # the safety net's line if it ended the run, else None


def estimate_lm_time(model: nn.Module, train_ids: torch.Tensor, cfg: LMTrainConfig, probe_updates: int = 8,
                     clock: Clock = time.perf_counter) -> TimeEstimate:
    """How long ``train_lm(model, train_ids, valid_ids, cfg)`` will train on this machine: a few updates
    of a copy of ``model`` on batches of ``cfg``'s shape, timed (``course_lib.train.time_updates``).
    The model and every random generator are left as they were; validation is not included."""
    device = next(model.parameters()).device
    probe = copy.deepcopy(model).train()
    optimizer = configure_optimizer(probe, cfg.max_lr, cfg.weight_decay)
    g = torch.Generator().manual_seed(cfg.seed)  # its own generator: the run's sampler is untouched

    def update(_: int) -> float:
        x, y = random_windows(train_ids, cfg.batch_size, cfg.context, g)
        return train_step(probe, (x.to(device), y.to(device)), optimizer, cfg.clip)  # .item() inside: waits

    return time_updates(update, cfg.steps, probe_updates=probe_updates, device=device, clock=clock)


def save_training(path: Path, model: nn.Module, optimizer: torch.optim.Optimizer, generator: torch.Generator,
                  step: int, history: LMHistory, running: float, count: int, spent: float) -> Path:
    """A checkpoint (``course_lib.checkpoints``) of a run stopped after ``step`` updates, to resume
    exactly."""
    from course_lib.checkpoints import save_checkpoint

    config = getattr(model, "config", None)
    return save_checkpoint(path, model, config=config if dataclasses.is_dataclass(config) else None, extra={
        "step": step, "optimizer": optimizer.state_dict(), "generator": generator.get_state(),
        "torch_rng": torch.get_rng_state(),  # dropout draws from the global generator
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "history": dataclasses.asdict(history), "running": running, "count": count, "spent": spent})


def train_lm(model: nn.Module, train_ids: torch.Tensor, valid_ids: torch.Tensor, cfg: LMTrainConfig,
             progress: bool = True, step_fn=None, clock: Clock = time.perf_counter,
             checkpoint: str | Path | None = None, stop_after: int | None = None,
             resume: bool = False) -> LMHistory:
    """The loop of the module docstring with course_lib's reference pieces (or ``step_fn``), for
    ``cfg.steps`` updates. ``clock`` only measures (seconds, tokens/s); ``cfg.max_minutes``, when set,
    is a safety net that stops the run with one line saying so (``LMHistory.stopped_early``).

    ``checkpoint``: where to save the run when it stops (after ``stop_after`` updates in all, or at the
    end); with ``resume``, the run continues from that file (weights, optimizer, sampler, step, history)."""
    from tqdm.auto import tqdm

    from course_lib.checkpoints import load_checkpoint

    step_fn = step_fn or train_step
    device = next(model.parameters()).device
    optimizer = configure_optimizer(model, cfg.max_lr, cfg.weight_decay)
    g = torch.Generator().manual_seed(cfg.seed)
    history, running, count, spent, first = LMHistory(), 0.0, 0, 0.0, 0
    if resume:
        if checkpoint is None:
            raise ValueError("resume=True needs the checkpoint to resume from")
        state = load_checkpoint(checkpoint, model, map_location=device)["extra"]
        optimizer.load_state_dict(state["optimizer"])
        g.set_state(state["generator"])
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        history = LMHistory(**state["history"])
        first, running, count, spent = state["step"], state["running"], state["count"], state["spent"]
    last_step = cfg.steps if stop_after is None else min(cfg.steps, stop_after)
    model.train()
    bar = tqdm(range(first, last_step), disable=not progress, leave=False)
    for step in bar:
        lr = cosine_lr(step, cfg.max_lr, cfg.warmup, cfg.steps, cfg.min_lr)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = random_windows(train_ids, cfg.batch_size, cfg.context, g)
        start = clock()
        running += step_fn(model, (x.to(device), y.to(device)), optimizer, cfg.clip)
        spent += clock() - start
        count += 1
        if step < cfg.steps - 1 and cfg.max_minutes is not None and spent >= 60 * cfg.max_minutes:
            history.stopped_early = safety_net_message(cfg.max_minutes, step + 1, cfg.steps, spent / 60)
        last = step == cfg.steps - 1 or history.stopped_early is not None
        if (
                step + 1
        # a pause (stop_after) is not an evaluation: resuming changes nothing
        ) % cfg.eval_every == 0 or last:
            history.step.append(step + 1)
            history.train_loss.append(running / count)
            history.valid_loss.append(
                estimate_loss(model, valid_ids, cfg.context, cfg.batch_size, cfg.eval_batches))
            history.seconds.append(spent)
            bar.set_postfix(train=f"{running / count:.3f}", valid=f"{history.valid_loss[-1]:.3f}")
            running, count = 0.0, 0
        if last:
            break
    done = step + 1 if last_step > first else first
    if checkpoint is not None:
        save_training(Path(checkpoint), model, optimizer, g, done, history, running, count, spent)
    if history.step:
        history.tokens_per_s = history.step[-1] * cfg.batch_size * cfg.context / max(spent, 1e-9)
    model.eval()
    if history.stopped_early:
        print(history.stopped_early, file=sys.stderr)
    return history


__all__ = [
    "LMHistory", "LMTrainConfig", "configure_optimizer", "cosine_lr", "estimate_lm_time", "estimate_loss",
    "save_training", "train_lm", "train_step"
]
