"""Train a course model from the shell, in one process or data-parallel over several.

    course train --model transformer --profile laptop                       # one process
    torchrun --nproc_per_node=4 -m course_lib.distributed --model transformer --steps 3000   # DDP, 4
    processes

Data parallelism (``DistributedDataParallel``): every process holds a full copy of the model and
trains on its own share of each epoch's batches (batch ``i`` goes to process ``i % world_size``);
after each backward pass the gradients are averaged across processes, so every copy takes the
same optimizer step and the weights stay identical. Each process uses ``max_tokens`` per batch,
so the effective batch is ``world_size`` times larger. Every run is counted in updates (the
profile's, or ``--steps``); the ``--minutes`` safety net is for one process only, since processes
must agree on when to stop. Backend: NCCL on GPUs
(one per process, ``LOCAL_RANK``), gloo on CPUs. Process 0 evaluates and writes the checkpoint
and results, exactly where ``course train`` and the notebooks do.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path

from course_lib import PROFILES, profile as current_profile

# The recipes of course_lib.recipes.RECIPES, named here so that `course --help` need not import torch.
MODELS = ("attention-rnn", "rnn", "transformer")


class Shard:
    """This process's share of a ``BucketedBatches``: batches rank, rank + world, ... of each epoch's plan.

    Every process computes the same plan (same seed, same epoch); the plan is cut to a multiple of
    ``world`` batches so that all processes take the same number of steps per epoch.
    """

    def __init__(self, batches, rank: int, world: int):
        self.batches, self.rank, self.world = batches, rank, world

    def __len__(self) -> int:
        return len(self.batches) // self.world

    def __iter__(self):
        plan = self.batches.plan(self.batches.epoch)
        self.batches.epoch += 1
        usable = len(plan) - len(plan) % self.world
        for indices in plan[self.rank:usable:self.world]:
            yield self.batches.data.batch(indices)


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``course train`` and ``python -m course_lib.distributed``."""
    parser.add_argument("--model", required=True, choices=MODELS, help="which course model to train")
    parser.add_argument("--profile", choices=PROFILES,
                        help="hyperparameter preset (default: course_lib.profile())")
    parser.add_argument(
        "--steps", type=int, help="optimizer updates (default: the profile's); the result depends on "
        "them, not on the machine's speed")
    parser.add_argument(
        "--minutes", type=float, help="safety net (single process only): stop after this much "
        "training time, saying so, even before --steps")
    parser.add_argument("--n-train", type=int, help="training pairs (default: the profile's)")
    parser.add_argument("--max-tokens", type=int,
                        help="padded tokens per batch and process (default: the profile's)")
    parser.add_argument("--device", help="cpu, cuda, cuda:1, mps ... (default: the best available)")
    parser.add_argument("--no-eval", action="store_true", help="skip BLEU on test/test_long")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--sync-report", type=Path, help=argparse.SUPPRESS)  # tests: per-rank weight digests
    return parser


def _digest(model) -> str:
    """SHA-256 of every parameter's bytes, in order: equal on two processes iff their weights are."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def run(args: argparse.Namespace) -> int:
    """Train (and evaluate, save) the model of ``args``; under ``torchrun`` as one of its processes."""
    import torch
    import torch.distributed as dist

    from course_lib import recipes
    from course_lib.text import BucketedBatches

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank, local_rank = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    profile = args.profile or current_profile()
    hp = recipes.hparams(args.model, profile, steps=args.steps, max_minutes=args.minutes,
                         n_train=args.n_train, max_tokens=args.max_tokens)
    if world > 1 and args.minutes is not None:
        raise SystemExit(
            "course_lib.distributed: --minutes is for one process: under DDP every process must stop "
            "at the same update, so give --steps")
    cuda = torch.cuda.is_available() and (args.device is None or args.device.startswith("cuda"))
    device = torch.device(args.device or ("cuda" if cuda else "cpu"))
    if world > 1 and cuda:
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    if world > 1:
        dist.init_process_group(backend="nccl" if cuda else "gloo")
    try:
        data = recipes.training_data(hp)
        batches = BucketedBatches(data, max_tokens=hp["max_tokens"], seed=0)
        wrap = None
        if world > 1:
            from torch.nn.parallel import DistributedDataParallel

            batches = Shard(batches, rank, world)
            wrap = (lambda m: DistributedDataParallel(m, device_ids=[device.index])
                    ) if cuda else DistributedDataParallel
        trained = recipes.fit(args.model, hp=hp, device=device, data=data, batches=batches, wrap=wrap,
                              progress=rank == 0 and not args.no_progress)
        trained.extra.update(world_size=world, device_name=_device_name(device))
        if args.sync_report:
            args.sync_report.mkdir(parents=True, exist_ok=True)
            (args.sync_report / f"rank{rank}.json").write_text(json.dumps({
                "rank": rank, "world_size": world, "updates": trained.history.step[-1],
                "digest": _digest(trained.model), "loss": trained.history.loss}))
        if rank == 0:
            metrics = {} if args.no_eval else recipes.evaluate(trained, device)
            checkpoint, results = recipes.save(trained, metrics)
            scores = ", ".join(f"{k} {v}" for k, v in metrics.items() if k in ("bleu_test", "bleu_test_long"))
            print(
                f"{args.model}: {trained.history.step[-1]} updates in {trained.history.minutes:.1f} min on "
                f"{world} process(es){'; ' + scores if scores else ''}\ncheckpoint {checkpoint}\nresults    "
                f"{results}"
            )
    finally:
        if world > 1:
            dist.destroy_process_group()
    return 0


def _device_name(device) -> str:
    import torch

    return torch.cuda.get_device_name(device) if device.type == "cuda" else device.type


def main(argv: list[str] | None = None) -> int:
    parser = add_arguments(
        argparse.ArgumentParser(prog="python -m course_lib.distributed",
                                description=__doc__.split("\n\n")[0]))
    return run(parser.parse_args(argv))


__all__ = ["MODELS", "Shard", "add_arguments", "main", "run"]


# torchrun --nproc_per_node=N -m course_lib.distributed --model transformer --steps 1000
if __name__ == "__main__":
    raise SystemExit(main())
