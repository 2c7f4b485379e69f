"""course_lib: the helper library of *Attention & Transformers, built from scratch*.

Notebook N teaches a building block; course_lib keeps a reference version of it so that notebook
N+1 can build on a correct one. Modules, one concept each:

    data          offline English→French corpus and real-corpus loading; grammar: the corpus's synchronous
                  grammar, lexicon: its words
    text          tokenizer, vocabulary, padding, length-bucketed batches
    rnn           Elman RNN, RNN language model, seq2seq encoder-decoder (notebook 01)
    attention     softmax, scaled dot-product, additive and multi-head attention, masks (02, 03)
    attention_rnn the Bahdanau-style RNN translator (02); cost: FLOP and parameter counts (03)
    positional    sinusoidal, learned and rotary position encodings (04); order_task: its ablation
    transformer   the encoder-decoder Transformer (05); params: closed-form parameter counts
    decoding      greedy and beam search, batched translation; kv_cache: incremental decoding
    train         training loop, device selection, eval_mode; checkpoints: checkpoints and results under runs/
    distributed   `course train`'s options and the data-parallel entry point (torchrun -m
    course_lib.distributed)
    recipes       how each course model is built, trained and evaluated per profile
    bleu          BLEU from scratch, equal to sacreBLEU (06); capstone: every model compared
    shakespeare   the Gutenberg plays, split by play, character vocabulary, batches (07)
    gpt           the decoder-only GPT/Llama: RMSNorm, SwiGLU, causal attention with RoPE, GQA, KV cache (07)
    sampling      temperature, top-k and top-p sampling, generation; lm_train: AdamW groups, cosine schedule
    stand_ins     models with known answers for the graded checks of decoders (01, 05); lm_stand_ins: for 07
    grading       the checks that graded test cells use (grading_errors: what they raise); roles: how the
                  grader pairs a module's parameters
    plotting      loss curves and heatmaps

The instructor's tooling is the package ``course_tools`` (the ``[instructor]`` extra); notebooks never import
it.
"""
from __future__ import annotations

import os
import random
from typing import Mapping, TypeVar

__version__ = "0.1.0"

PROFILES = ("smoke", "laptop", "gpu")
# CPU kernels split their sums over threads, so a different thread count changes the last bits of a
# result and, over hundreds of updates, the numbers a notebook prints. The laptop profile always uses
# this many, whatever the machine's core count (a many-core machine is a little slower for it; a
# machine with another instruction set can still differ in the last digits).
LAPTOP_THREADS = 2

T = TypeVar("T")


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and PyTorch's generators (CPU and every CUDA device); in the laptop
    profile, also fix torch's thread count (:data:`LAPTOP_THREADS`), so that a run prints the same
    numbers on a machine with more or fewer cores."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    if profile() == "laptop":
        torch.set_num_threads(LAPTOP_THREADS)


def profile() -> str:
    """The run profile: ``smoke``, ``laptop`` or ``gpu`` (README.md, "Profiles").

    ``COURSE_PROFILE`` wins when set; nbgrader's validate and autograde (which set
    ``NBGRADER_EXECUTION``) run in ``smoke``; otherwise ``gpu`` when CUDA is available, else ``laptop``.
    """
    chosen = os.environ.get("COURSE_PROFILE", "").strip().lower()
    if chosen:
        if chosen not in PROFILES:
            raise ValueError(f"COURSE_PROFILE={chosen!r} is not one of {', '.join(PROFILES)}")
        return chosen
    if os.environ.get("NBGRADER_EXECUTION"):
        return "smoke"
    import torch

    return "gpu" if torch.cuda.is_available() else "laptop"


def by_profile(table: Mapping[str, T], name: str | None = None) -> T:
    """Pick this profile's entry of a per-profile table such as ``{"smoke": ..., "laptop": ..., "gpu":
    ...}``."""
    name = name or profile()
    missing = [p for p in PROFILES if p not in table]
    if missing:
        raise KeyError(f"profile table lacks {', '.join(missing)}: it has {', '.join(table)}")
    return table[name]


__all__ = ["PROFILES", "by_profile", "profile", "seed_everything", "__version__"]
