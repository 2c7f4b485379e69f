"""Every translation model of the course, loaded from its notebook's checkpoint or quickly retrained.

Notebook 06 compares the models of notebooks 01, 02 and 05 on one test set. Each is one row of
``COURSE_MODELS``: a label and the name of its recipe in ``course_lib.recipes.RECIPES``, which says
where its notebook saves the checkpoint (``runs_dir()/<assignment>/<checkpoint>``) and how to
build, train and decode the model. A new model is a recipe plus one row here::

    for spec in COURSE_MODELS:
        if (why := unavailable(spec)) is None:
            loaded = load_or_retrain(spec, dict(n_train=50_000, steps=250))
            hyps = loaded.translate(sources)

A checkpoint that is missing, corrupt (``CheckpointError``), does not fit its model, or was written
by a ``smoke`` run while this run is not one is replaced by a quick retrain with the recipe and the
profile's preset, for fewer updates, saved under ``runs_dir()/06_bleu/retrained/`` so that the
next run reuses it (the notebooks' own checkpoints are never overwritten).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import nn

import course_lib
from course_lib import recipes
from course_lib.decoding import translate
from course_lib.recipes import RECIPES, Recipe
from course_lib.text import Vocab
from course_lib.checkpoints import CheckpointError, load_checkpoint, runs_dir, save_checkpoint
from course_lib.train import pick_device

ASSIGNMENT = "06_bleu"


@dataclass(frozen=True)
class CourseModel:
    """One model of the comparison."""

    name: str  # label in tables and plots
    recipe: str  # key of course_lib.recipes.RECIPES: its notebook, checkpoint, classes and training


COURSE_MODELS: tuple[CourseModel, ...] = (
    CourseModel("RNN (no attention)", "rnn"),
    CourseModel("RNN + attention", "attention-rnn"),
    CourseModel("Transformer", "transformer"),
)


def _recipe(spec: CourseModel) -> Recipe:
    return RECIPES[spec.recipe]


def unavailable(spec: CourseModel) -> str | None:
    """Why ``spec`` cannot be used in this checkout (no such recipe, or its code is missing), or None."""
    if spec.recipe not in RECIPES:
        return f"course_lib.recipes has no recipe {spec.recipe!r}"
    for path in (_recipe(spec).model, _recipe(spec).presets, _recipe(spec).decode):
        try:
            recipes.resolve(path)
        except ModuleNotFoundError as error:
            return f"{error.name} does not exist yet"
        except AttributeError:
            return f"{path} does not exist yet"
    return None


@dataclass
class LoadedModel:
    """A trained model with its vocabularies, ready to translate."""

    spec: CourseModel
    model: nn.Module  # in eval mode, on the device it was loaded to
    src_vocab: Vocab
    tgt_vocab: Vocab
    origin: str  # where it came from, for the table: "notebook 01 (laptop profile)", "quick retrain (...)"
    path: Path  # the checkpoint it was loaded from or saved to

    def translate(self, sources: Sequence[str], max_len: int | None = None) -> list[str]:
        """Greedy translations of ``sources`` (``max_len`` None: 2 x source length + 10 tokens)."""
        device = next(self.model.parameters()).device
        return translate(recipes.resolve(_recipe(self.spec).decode), self.model, sources, self.src_vocab,
                         self.tgt_vocab, max_len=max_len, device=device)


def _load(spec: CourseModel, path: Path, device: torch.device) -> tuple[nn.Module, dict]:
    """Build the model from the checkpoint's config and load its weights (CheckpointError if unusable)."""
    ckpt = load_checkpoint(path)
    if ckpt["extra"].get("profile") == "smoke" and course_lib.profile() != "smoke":
        raise CheckpointError(f"{path}: written by a smoke run, which only proves the code runs")
    if not {"src", "tgt"} <= set(ckpt["vocabs"]):
        raise CheckpointError(f"{path}: has no src/tgt vocabularies")
    presets = recipes.resolve(_recipe(spec).presets)
    config_class = type(next(iter(presets.values())))
    try:
        model = recipes.resolve(_recipe(spec).model)(config_class(**ckpt["config"]))
    except (TypeError, ValueError) as error:  # the config class changed since the file was written
        raise CheckpointError(f"{path}: its config does not build a {_recipe(spec).model}: {error}") from None
    load_checkpoint(path, model)  # checks that every weight fits before loading it
    return model.to(device).eval(), ckpt


def retrain(spec: CourseModel, hp: dict, device: torch.device,
            progress: bool = True) -> tuple[nn.Module, Any, Vocab, Vocab, str]:
    """Train ``spec`` with its recipe and this profile's preset, ``hp`` replacing some of the recipe's
    hyperparameters (e.g. ``n_train`` and ``steps``: a shorter run, however fast the machine).

    Returns the model (eval mode), its config, both vocabularies and a one-line description.
    """
    run = recipes.fit(spec.recipe, device=device, progress=progress, **hp)
    note = f"quick retrain ({run.hp['profile']}: {run.history.step[-1]} updates, {run.hp['n_train']:,} pairs)"
    return run.model, run.cfg, run.src_vocab, run.tgt_vocab, note


def load_or_retrain(spec: CourseModel, hp: dict, device: torch.device | str | None = None,
                    progress: bool = True) -> LoadedModel:
    """The model of ``spec``: its notebook's checkpoint, else an earlier quick retrain, else a new one
    (``hp``: see ``retrain``). ``origin`` says which, and why the notebook's checkpoint was not used."""
    device = torch.device(device) if device is not None else pick_device()
    recipe = _recipe(spec)
    original = runs_dir() / recipe.assignment / recipe.checkpoint
    retrained = runs_dir() / ASSIGNMENT / "retrained" / f"{recipe.assignment}-{recipe.checkpoint}"
    problems = []
    for path, label in ((original, f"notebook {recipe.assignment[:2]}"), (retrained,
                                                                          "earlier quick retrain")):
        try:
            model, ckpt = _load(spec, path, device)
        except CheckpointError as error:
            problems.append(str(error) if path.exists() else f"no {path.name} in {path.parent}")
            continue
        origin = f"{label} ({ckpt['extra'].get('profile', '?')} profile)"
        return LoadedModel(spec, model, ckpt["vocabs"]["src"], ckpt["vocabs"]["tgt"], origin, path)
    model, cfg, src_vocab, tgt_vocab, note = retrain(spec, hp, device, progress)
    save_checkpoint(retrained, model, config=cfg, vocabs={"src": src_vocab, "tgt": tgt_vocab},
                    extra={"profile": course_lib.profile(), "note": note})
    return LoadedModel(spec, model.to(device), src_vocab, tgt_vocab, f"{note}; {problems[0]}", retrained)


__all__ = [
    "ASSIGNMENT", "COURSE_MODELS", "CourseModel", "LoadedModel", "load_or_retrain", "retrain", "unavailable"
]
