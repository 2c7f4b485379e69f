"""``course train``: train a course model from the shell, as its notebook does.

    course train --model transformer --profile laptop
    course train --model rnn --steps 500 --no-eval

Builds the model from the profile's preset, trains it with the recipe of its notebook
(``course_lib.recipes``) behind a progress bar, scores it with BLEU on test and test_long, and
writes the checkpoint and results.json under ``runs/<assignment>/``, where notebook 06 looks for
them. For several GPUs, run the same options under ``torchrun -m course_lib.distributed`` (DDP).
"""
from __future__ import annotations

import argparse

from course_lib.distributed import add_arguments, run


def add_parser(steps: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``train`` among the ``course`` steps."""
    parser = steps.add_parser(
        "train", help="train a course model (rnn, attention-rnn, transformer): checkpoint + results")
    return add_arguments(parser)


def train_command(arguments: argparse.Namespace) -> int:
    return run(arguments)
