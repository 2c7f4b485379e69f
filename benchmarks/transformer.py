"""Benchmark of notebook 05 and of course_lib's Transformer.

    python -m benchmarks.transformer                      # all sections, laptop profile
    python -m benchmarks.transformer --skip-notebook      # throughput (and GPU) only
    python -m benchmarks.transformer --threads 1          # torch threads here and in the notebook's kernel

Sections of ``benchmarks/results/05_transformer.json``:

* ``notebook``: ``solutions/05_transformer`` executed top to bottom in a profile (``_notebook_run``):
  wall minutes, updates, BLEU on test and test_long, the RoPE variant, and 01/02's models on the
  same sentences as the notebook recorded them;
* ``throughput``: training tokens/s of ``course_lib.transformer.Transformer`` against
  ``TorchTransformer`` (the same embeddings and positions around ``nn.Transformer``, the same size):
  the same batches, the same process, rounds alternating between the two to even out the
  machine's load. Forward, label-smoothed loss, backward, Adam step; target tokens per second;
* ``gpu``: the gpu-profile run (tokens/s, MFU against the card's dense bf16 peak, BLEU, minutes)
  when CUDA is available; otherwise a note that this run had no GPU.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import time
import warnings
from pathlib import Path

import torch
from torch import nn

from benchmarks._notebook_run import add_notebook_arguments, machine, run_notebook, write_report
from benchmarks.table_quality import GPU_TRAIN_MINUTES
from course_lib.positional import make_positional
from course_lib.transformer import Transformer, TransformerConfig, label_smoothed_cross_entropy

ROOT = Path(__file__).resolve().parents[1]

ASSIGNMENT = "05_transformer"


class TorchTransformer(nn.Module):
    """``nn.Transformer`` with course_lib's embeddings (× √d_model), positions and tied output layer.

    Same configuration fields as ``course_lib.transformer.Transformer``; it has 4·d_model more
    parameters with post-LN, where ``nn.Transformer`` keeps final LayerNorms the paper does not have.
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.src_embed = nn.Embedding(cfg.src_vocab_size, cfg.d_model)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, cfg.d_model)
        self.positional = make_positional(cfg.positional, cfg.d_model, cfg.max_len, n_heads=cfg.n_heads)
        with warnings.catch_warnings():  # "nested tensors are not used with norm_first": we know
            warnings.simplefilter("ignore", UserWarning)
            self.core = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_encoder_layers, cfg.n_decoder_layers,
                                       cfg.d_ff, cfg.dropout, batch_first=True, norm_first=cfg.norm_first)
        self.out = nn.Linear(cfg.d_model, cfg.tgt_vocab_size, bias=False)
        if cfg.tie_output:
            self.out.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        scale = math.sqrt(self.cfg.d_model)
        x = self.dropout(self.positional(self.src_embed(src) * scale))  # (B, S, d_model)
        y = self.dropout(self.positional(self.tgt_embed(tgt_in) * scale))  # (B, T, d_model)
        T = tgt_in.shape[1]
        causal = nn.Transformer.generate_square_subsequent_mask(T, device=tgt_in.device)  # (T, T), -inf above
        pad = src == 0  # (B, S), torch's convention: True = ignore
        h = self.core(x, y, tgt_mask=causal, src_key_padding_mask=pad, memory_key_padding_mask=pad,
                      tgt_is_causal=True)
        return self.out(h)  # (B, T, V)

    @torch.no_grad()
    def load_from(self, model: Transformer) -> "TorchTransformer":
        """Copy course_lib's weights (and drop the final LayerNorms for a post-LN model)."""
        self.src_embed.load_state_dict(model.src_embed.state_dict())
        self.tgt_embed.load_state_dict(model.tgt_embed.state_dict())
        self.out.weight.copy_(model.out.weight)
        pairs = [
            *zip(self.core.encoder.layers, model.encoder_layers),
            *zip(self.core.decoder.layers, model.decoder_layers)
        ]
        for theirs, ours in pairs:
            attention = [(theirs.self_attn, ours.self_attn)]
            if hasattr(ours, "cross_attn"):
                attention.append((theirs.multihead_attn, ours.cross_attn))
                theirs.norm3.load_state_dict(ours.norm3.state_dict())
            for t, o in attention:
                t.in_proj_weight.copy_(torch.cat([o.q_proj.weight, o.k_proj.weight, o.v_proj.weight]))
                t.in_proj_bias.copy_(torch.cat([o.q_proj.bias, o.k_proj.bias, o.v_proj.bias]))
                t.out_proj.load_state_dict(o.out_proj.state_dict())
            theirs.linear1.load_state_dict(ours.ff.linear1.state_dict())
            theirs.linear2.load_state_dict(ours.ff.linear2.state_dict())
            theirs.norm1.load_state_dict(ours.norm1.state_dict())
            theirs.norm2.load_state_dict(ours.norm2.state_dict())
        if model.cfg.norm_first:
            self.core.encoder.norm.load_state_dict(model.encoder_norm.state_dict())
            self.core.decoder.norm.load_state_dict(model.decoder_norm.state_dict())
        else:
            self.core.encoder.norm, self.core.decoder.norm = nn.Identity(), nn.Identity()
        return self


def throughput(profile: str = "laptop", rounds: int = 6, steps_per_round: int = 5,
               n_train: int = 20_000) -> dict:
    """Training target tokens/s of course_lib's Transformer vs TorchTransformer on identical batches."""
    from course_lib import recipes, seed_everything
    from course_lib.text import BucketedBatches
    from course_lib.train import pick_device

    device = pick_device()
    hp = recipes.hparams("transformer", profile, n_train=n_train)
    data = recipes.training_data(hp)
    cfg = recipes.build("transformer", len(data.src_vocab), len(data.tgt_vocab), profile)[1]
    batches = list(BucketedBatches(data, max_tokens=hp["max_tokens"], seed=0))[: rounds * steps_per_round + 2]
    autocast = getattr(torch, hp["autocast"]) if hp.get("autocast") else None
    contenders = {}
    for name, cls in (("course_lib", Transformer), ("nn.Transformer", TorchTransformer)):
        seed_everything(0)
        model = cls(cfg).to(device).train()
        contenders[name] = dict(model=model, optimizer=torch.optim.Adam(model.parameters(), lr=1e-4),
                                wall=0.0, cpu=0.0, tokens=0)

    def step(c, batch):
        batch = batch.to(device)
        with torch.autocast(device.type, dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            loss = label_smoothed_cross_entropy(c["model"](batch.src, batch.tgt_in), batch.tgt_out)
        c["optimizer"].zero_grad(set_to_none=True)
        loss.backward()
        c["optimizer"].step()

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    for c in contenders.values():  # warm-up: allocator, kernels' first calls
        for batch in batches[:2]:
            step(c, batch)
    for r in range(rounds):
        chunk = batches[2 + r * steps_per_round: 2 + (r + 1) * steps_per_round]
        order = list(contenders.values()) if r % 2 == 0 else list(contenders.values())[::-1]
        for c in order:
            sync()
            wall, cpu = time.perf_counter(), time.process_time()
            for batch in chunk:
                step(c, batch)
            sync()
            c["wall"] += time.perf_counter() - wall
            c["cpu"] += time.process_time() - cpu
            c["tokens"] += sum(b.n_target_tokens for b in chunk)
    report = {name: {"tokens_per_s": round(c["tokens"] / c["wall"], 1),
                     "tokens_per_cpu_s": round(c["tokens"] / c["cpu"], 1),
                     "parameters": sum(p.numel() for p in c["model"].parameters())}
              for name, c in contenders.items()}
    ours, theirs = report["course_lib"], report["nn.Transformer"]
    return {
        "profile": profile, "device": str(device), "config": cfg.__dict__,
        "steps_each": rounds * steps_per_round, "target_tokens": contenders["course_lib"]["tokens"],
        **report, "ratio_tokens_per_s": round(ours["tokens_per_s"] / theirs["tokens_per_s"], 3),
        "ratio_tokens_per_cpu_s": round(ours["tokens_per_cpu_s"] / theirs["tokens_per_cpu_s"],
                                        3), "target": ">= 1.0"
    }


def earlier_models() -> dict:
    """01's and 02's BLEU as their own benchmarks recorded them (benchmarks/results/), for comparison."""
    found = {}
    for assignment in ("01_rnn_baselines", "02_attention"):
        path = ROOT / "benchmarks" / "results" / f"{assignment}.json"
        if not path.is_file():
            found[assignment] = None
            continue
        data = json.loads(path.read_text())
        flat = {**data, **data.get("notebook", {})}  # either layout: top-level or a "notebook" section
        found[assignment] = {k: flat.get(k) for k in ("date", "profile", "notebook_minutes", "bleu_test",
                                                      "bleu_test_long", "updates")}
        found[assignment]["load_average"] = (data.get("machine") or {}).get("load_average_before") or \
            (data.get("machine") or {}).get("load_average_1min")
    return found


def gpu_plan() -> dict:
    """How the gpu row was sized: its updates and batch, and the minutes they take at the throughput
    measured on an H200 (course_lib.recipes), against the training-time target."""
    from course_lib import recipes

    hp = recipes.HPARAMS["transformer"]["gpu"]
    return {"steps": hp["steps"], "max_tokens": hp["max_tokens"], "tokens_per_s": recipes.GPU_TOKENS_PER_S,
            "planned_train_minutes": round(recipes.planned_minutes(hp, recipes.GPU_TOKENS_PER_S), 2),
            "target_train_minutes": GPU_TRAIN_MINUTES}


def gpu_section() -> dict:
    """The gpu profile through the same recipe as `course train`, or why it was not measured."""
    if not torch.cuda.is_available():
        return {"measured": False, "plan": gpu_plan(), "note": "no GPU was available on this run: the "
                "gpu-profile numbers (tokens/s, MFU, BLEU, minutes on an H100-class card) were not measured"}
    from course_lib import recipes
    from benchmarks.flops import peak_flops, training_flops
    from course_lib.text import BucketedBatches

    run = recipes.fit("transformer", "gpu", progress=False)
    metrics = recipes.evaluate(run)
    data = recipes.training_data(run.hp)
    sample = list(BucketedBatches(data, max_tokens=run.hp["max_tokens"], seed=0))[:50]
    flops_per_token = (
        sum(training_flops(run.cfg, (b.src != 0).sum(1), (b.tgt_out != 0).sum(1))
            for b in sample) / sum(b.n_target_tokens for b in sample))
    tokens_per_s = sum(run.history.tokens_per_s[1:]) / max(1, len(run.history.tokens_per_s[1:]))
    name = torch.cuda.get_device_name(0)
    peak = peak_flops(name)
    return {"measured": True, "plan": gpu_plan(), "device_name": name,
            "train_minutes": round(run.history.minutes, 2),
            "updates": run.history.step[-1], "tokens_per_s": round(tokens_per_s, 1),
            "model_flops_per_target_token": flops_per_token,
            "mfu": None if peak is None else round(tokens_per_s * flops_per_token / peak, 4),
            "peak_bf16_flops": peak, **metrics}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_notebook_arguments(parser, ASSIGNMENT)  # --threads also sets this process's torch threads
    parser.add_argument("--skip-notebook", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args(argv)
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        torch.set_num_threads(args.threads)
    output = args.output or ROOT / "benchmarks" / "results" / f"{ASSIGNMENT}.json"
    # sections skipped this time keep their earlier numbers (each carries its own machine load)
    report: dict = json.loads(output.read_text()) if output.is_file() else {}
    report.pop("benchmark", None), report.pop("date", None)
    report.update(assignment=ASSIGNMENT, machine=machine())
    if not args.skip_notebook:
        load_before = os.getloadavg()
        children = resource.getrusage(
            resource.RUSAGE_CHILDREN)  # the kernel is a child process, reaped at the end
        minutes, results = run_notebook(ASSIGNMENT, args.profile, args.timeout, keep=args.keep)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_minutes = (after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime) / 60
        report["notebook"] = {
            "profile": args.profile, "notebook_minutes": round(minutes, 2),
            # CPU time of the kernel: with one thread, what the notebook would take on one idle core
            "kernel_cpu_minutes": round(cpu_minutes, 2), "kernel_threads": args.threads or "torch default",
            "load_average_before": load_before, "load_average_after": os.getloadavg(), **results}
    if not args.skip_throughput:
        report["throughput"] = throughput("gpu" if torch.cuda.is_available() else "laptop")
        report["throughput"]["load_average_after"] = os.getloadavg()
    report["earlier_models"] = earlier_models()
    report["gpu"] = gpu_section()
    path = write_report(ASSIGNMENT, report, output)
    print(path.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
