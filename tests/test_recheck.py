"""The grader's own re-check, piece by piece (no sandbox): how answers are compared, which
references a student's sandbox lacks, how test cells split, and which answers are pasted references."""
from __future__ import annotations

import collections
import dataclasses
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

from course_tools.grading.copies import pasted_references
from course_tools.grading.compare import ARGUMENTS_AFTER, compare
from course_tools.grading.sandboxed.plain import mutable, plain, same_state
from course_tools.grading.sandboxed.probes import CHANGES_ARGUMENTS, Recorder, path_to
from course_tools.grading.redacted import redact_source, redacted_course_lib, reference_sources
from course_tools.grading.compare import arguments_contract
from course_tools.grading.submission import split_test_cell
from course_lib.grading import GradingError, unchanged
from course_lib.roles import RULE, check_parameter_roles, match_parameters


def record(value, **extra) -> dict:
    return {"return": plain(value), "args_after": mutable([[], {}]), **extra}


def test_types_are_compared_exactly_but_numbers_are_numbers():
    assert "Python number" in compare(record(1.5), record(torch.tensor(1.5)))  # a 0-d tensor is not a float
    assert compare(record(2.0), record(2)) is None  # an int is a number
    assert compare(record(2.0), record(__import__("numpy").float64(2.0))) is None
    # as check_number: an int contract takes no float (6.0), no NumPy integer and no bool
    assert "Python number (int)" in compare(record(6), record(6.0))
    assert "Python number (int)" in compare(record(6), record(__import__("numpy").int64(6)))
    assert "Python number (int)" in compare(record(1), record(True))
    assert "Python number (float)" in compare(record(0.5), record(__import__("numpy").float32(0.5)))
    assert compare(record(6), record(6)) is None
    assert "shape" in compare(record(torch.zeros(())), record(torch.zeros(1)))  # shape () is not (1,)


def test_integer_and_bool_tensors_keep_their_dtype_floats_compare_by_value():
    """Token ids, indices, counts and masks: int32 is not torch.long, nor a float (issue 25: the
    notebook's checks say so first); a float result may be float32 or float64."""
    ids = torch.tensor([3, 1, 4])
    assert "dtype" in compare(record(ids), record(ids.int()))
    assert "dtype" in compare(record(ids), record(ids.float()))
    assert "dtype" in compare(record(ids > 2), record((ids > 2).long()))
    assert compare(record(ids), record(ids.clone())) is None
    assert compare(
        record(torch.tensor([0.5, 1.5])), record(torch.tensor([0.5, 1.5], dtype=torch.float64))) is None


def test_mappings_may_hold_extra_keys_counters_compare_their_non_zero_counts():
    assert compare(record({"a": 1, "b": 2.0}), record({"a": 1, "b": 2.0, "total": 3})) is None
    assert "no key" in compare(record({"a": 1, "b": 2}), record({"a": 1}))
    assert compare(record(collections.Counter(x=2)), record(collections.Counter(x=2, y=0))) is None
    assert "non-zero counts" in compare(record(collections.Counter(x=2)),
                                        record(collections.Counter(x=2, y=1)))


def test_modules_compare_parameters_by_shape_not_name():
    class A(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(5, 3)

    class B(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Parameter(torch.zeros(5, 3))

    assert compare(record(A()), record(B())) is None
    assert "shapes" in compare(record(A()), record(nn.Linear(3, 5)))


def test_parameters_are_matched_by_name_then_shape():
    wanted = {"embedding.weight": torch.zeros(5, 3), "out.bias": torch.zeros(5)}
    own = {"table": torch.ones(5, 3), "out.bias": torch.ones(5)}
    mapping = match_parameters(own, wanted)
    assert mapping == {"embedding.weight": "table", "out.bias": "out.bias"}
    with pytest.raises(AttributeError, match="left unpaired, yours: w \\(2, 2\\)"):
        match_parameters({"w": torch.zeros(2, 2)}, wanted)


def _projections(*names: str) -> nn.Module:
    """A module with one 3 x 3 linear layer per name, created in the order given."""
    module = nn.Module()
    for name in names:
        setattr(module, name, nn.Linear(3, 3))
    return module


@pytest.mark.parametrize("names, verdict", [
    (("q", "k", "v", "o"), None),                       # the given names, the given order
    (("o", "v", "k", "q"), None),                       # the given names: the order is free
    (("w_q", "w_k", "w_v", "w_o"), None),               # other names, the given order
    (("w_o", "w_q", "w_k", "w_v"), "does not hold it"),  # other names, another order: paired wrongly
    (("w_o", "w_v"), "cannot pair"),                    # too few
    (("q", "k", "v", "o", "scale"), "cannot pair"),     # one more than the reference has
])
def test_a_visible_check_pairs_parameters_as_the_grader_does(names, verdict):
    given = {f"{role}.{field}": torch.randn(3, 3) if field == "weight" else torch.randn(3)
             for role in "qkvo" for field in ("weight", "bias")}
    module = _projections(*names)
    with torch.no_grad():                                # filled by role, as a correct load_from_torch does
        for name in names:
            role = name[-1]
            if f"{role}.weight" in given:
                getattr(module, name).weight.copy_(given[f"{role}.weight"])
                getattr(module, name).bias.copy_(given[f"{role}.bias"])
    if verdict is None:
        check_parameter_roles("layer", module, given, holding="after loading")
        assert all(torch.equal(dict(module.named_parameters())[own], given[ref])
                   for ref, own in match_parameters(dict(module.named_parameters()), given).items())
        return
    with pytest.raises(GradingError, match=verdict) as failure:
        check_parameter_roles("layer", module, given, holding="after loading")
    assert RULE in str(failure.value)


def test_a_checked_value_is_compared_with_what_the_test_expected_at_its_tolerance():
    truth = torch.tensor([0.5, 0.25], dtype=torch.float64)
    solution = truth.float()
    expected = record(solution, checks=[{"path": [], "expected": plain(truth), "atol": 1e-3, "rtol": 0.0}])
    assert compare(expected, record(solution + 5e-4)) is None  # within the test's own tolerance
    assert "values differ" in compare(expected, record(solution + 2e-3))
    pair = record((solution, solution),
                  checks=[{"path": [1], "expected": plain(truth), "atol": 1e-3, "rtol": 0.0}])
    assert "return value[0]" in compare(pair, record((solution + 1e-3, solution)))  # item 0: vs the solution


def test_gradients_are_compared_where_recorded():
    expected = record(torch.ones(2), gradients={"inputs": [plain(torch.ones(2))], "parameters": {}})
    assert compare(
        expected, record(torch.ones(2), gradients={"inputs": [plain(torch.ones(2))],
                                                   "parameters": {}})) is None
    assert "gradient" in compare(expected,
                                 record(torch.ones(2), gradients={"inputs": [None], "parameters": {}}))


def test_an_expected_error_matches_any_error_but_not_writing_the_answer():
    raised = {"error": "ValueError: position 10 has no row"}
    assert compare(raised, {"error": "IndexError: index out of range"}) is None
    assert "raise" in compare(raised, {"error": "NotImplementedError: "})
    assert "raise" in compare(raised, record(1.0))
    assert compare(record(1.0), {"error": "ValueError: secret hidden input 1234"}) == "it raised ValueError"


def test_random_answers_are_compared_by_distribution():
    def dropout(seed, p=0.25, scale=True):
        generator = torch.Generator().manual_seed(seed)
        keep = torch.rand(4000, generator=generator) >= p
        return record(keep / (1 - p) if scale else keep.float())

    solution = {"samples": [dropout(s) for s in range(8)]}
    assert compare(solution, {"samples": [dropout(100 + s) for s in range(8)]}) is None
    assert "random seeds" in compare(solution, {"samples": [dropout(100 + s, scale=False) for s in range(8)]})
    assert "from one seed to the next" in compare(solution, {"samples": [dropout(7) for _ in range(8)]})


def test_a_result_is_found_by_identity():
    a, b = torch.zeros(1), torch.zeros(1)
    assert path_to((a, {"w": b}), b) == (1, "w") and path_to(a, a) == () and path_to(
        (a, ), torch.zeros(1)) is None


def test_test_cells_split_into_visible_and_hidden_parts():
    assert split_test_cell("a = 1\n### BEGIN HIDDEN TESTS\nb = 2\n### END HIDDEN TESTS\nc = 3") == \
        [("visible", "a = 1"), ("hidden", "b = 2"), ("visible", "c = 3")]
    nested = "for i in x:\n    ### BEGIN HIDDEN TESTS\n    b = 2\n    ### END HIDDEN TESTS\n"
    assert split_test_cell(nested) == [("hidden", nested)]  # cannot be split: all of it stays hidden


def test_redacted_sources_keep_the_names_but_not_the_code():
    source = ("import torch\n\ndef softmax(x):\n    return x.exp() / x.exp().sum()\n\nclass M:\n    def "
              "forward(self):\n        return 1\n")
    text, removed = redact_source(source, {"softmax", "course_lib.m.M"}, "course_lib.m")
    assert removed == ["course_lib.m.softmax", "course_lib.m.M"]
    assert "exp" not in text and "return 1" not in text and "def softmax" in text and "class M" in text


def test_the_redacted_course_lib_stubs_the_references_and_holds_no_bytecode(tmp_path):
    folder, removed = redacted_course_lib({"softmax", "course_lib.rnn.rnn_cell_step"}, tmp_path)
    assert "course_lib.attention.softmax" in removed and "course_lib.rnn.rnn_cell_step" in removed
    assert not list(folder.rglob("*.pyc")) and (folder / "attention.py").is_file()
    probe = ("import course_lib.attention as a, course_lib.rnn as r\n"
             "for f in (a.softmax, r.rnn_cell_step):\n"
             "    try:\n        f(1)\n    except NotImplementedError as e:\n        print('stub', e)\n")
    copy_root = tmp_path / "site"
    copy_root.mkdir()
    (copy_root / "course_lib").symlink_to(folder)
    import site

    path = [str(copy_root), *site.getsitepackages()]  # without site's .pth files: no editable finder
    out = subprocess.run([sys.executable, "-S", "-c", f"import sys; sys.path[:0] = {path!r}\n" + probe],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.count("stub") == 2, out.stderr


def test_a_pasted_reference_is_flagged_and_an_own_answer_is_not():
    references = reference_sources({"masked_softmax"})
    pasted = references["course_lib.attention.masked_softmax"].replace("scores", "s").replace("mask", "m")
    assert pasted_references({"cell": pasted}, references)
    own = (
        "def masked_softmax(scores, mask=None):\n    if mask is not None:\n"
        "        scores = scores.masked_fill(~mask, -1e30)\n    w = (scores - scores.amax(-1, "
        "keepdim=True)).exp()\n"
        "    if mask is not None:\n        w = w * mask\n    return w / w.sum(-1, "
        "keepdim=True).clamp_min(1e-30)\n"
    )
    assert not pasted_references({"cell": own}, references)


def test_optimizers_compare_their_groups_and_training_steps_the_parameters_they_change():
    model = nn.Linear(3, 2)
    decay_first = torch.optim.AdamW([{"params": [model.weight], "weight_decay": 0.1},
                                     {"params": [model.bias], "weight_decay": 0.0}], lr=1e-3)
    bias_first = torch.optim.AdamW([{"params": [model.bias], "weight_decay": 0.0},
                                    {"params": [model.weight], "weight_decay": 0.1}], lr=1e-3, foreach=False)
    everything_decayed = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    assert compare(record(decay_first), record(bias_first)) is None
    assert "groups" in compare(record(decay_first), record(everything_decayed))
    before = {"return": None, "args_after": mutable([[model], {}])}
    with torch.no_grad():
        model.bias.add_(0.5)
    assert "parameter bias" in compare(before, {"return": None, "args_after": mutable([[model], {}])})


def test_a_message_about_arguments_after_the_call_names_the_contract_the_solution_keeps():
    """Issue 25: "arguments after the call[1]['cache'].k: values differ" did not say what was expected.
    The record notes whether the solution's call changed its arguments; the message says which
    contract a student's different arguments broke: left as given (a change in place), or the
    state the exercise fixes (a cache's keys, a model after a step)."""
    recorder = Recorder()
    recorder.cell = "test-cell"
    namespace = {"scaled": lambda logits: logits / 2,
                 "appended": lambda cache, k: cache.append(k) or len(cache)}
    recorder.wrap(namespace, ["scaled", "appended"])
    logits, cache = torch.tensor([1.0, float("nan")]), [torch.ones(2)]
    namespace["scaled"](logits)
    namespace["appended"](cache, torch.zeros(2))
    keeps, changes = recorder.calls
    assert keeps[CHANGES_ARGUMENTS] is False and changes[CHANGES_ARGUMENTS] is True

    mismatch = compare({"return": None, "args_after": mutable([[logits], {}])},
                       {"return": None, "args_after": mutable([[logits / 2], {}])})
    assert mismatch.where == ARGUMENTS_AFTER and mismatch.hidden() == f"{ARGUMENTS_AFTER}: values differ"
    assert "changed one in place" in arguments_contract(keeps)
    assert "the exercise fixes what this call leaves" in arguments_contract(changes)
    assert same_state(mutable([logits]), mutable([logits.clone()]))  # NaN is NaN
    assert not same_state(mutable([torch.zeros(2)]), mutable([torch.zeros(2, dtype=torch.long)]))


def _replace_word(tokens):
    tokens[0] = tokens[0].upper()


def _replace_reference(references):
    references[0][-1] = "mat"


def _add_key(counts):
    counts["new"] = 1


def _count_again(counts):
    counts["a"] += 1


def _scale(pair):
    pair[0].mul_(2)


def _add_to_set(seen):
    seen.add("z")


def _flip(mask):
    mask.logical_not_()


@dataclasses.dataclass
class _Config:
    d_model: int = 8
    max_len: int = 16


def _shorten(cfg):
    cfg.max_len = 0


@pytest.mark.parametrize("argument, change", [
    (["the", "cat"], _replace_word),
    ([["the", "cat"], ["a", "dog"]], _replace_reference),
    ({"a": 1}, _add_key),
    ({"a": 1}, _count_again),
    ((torch.ones(2), torch.zeros(2)), _scale),
    ({"x", "y"}, _add_to_set),
    (torch.tensor([True, False]), _flip),
    (np.arange(3.0), lambda array: array.__setitem__(0, 5.0)),
    (_Config(), _shorten),
], ids=["word replaced", "reference word replaced", "key added", "count changed", "tensor in a tuple",
        "set grown", "bool mask flipped", "array item", "config field"])
def test_what_validate_sees_changed_in_an_argument_the_grader_sees_too(argument, change):
    """Issue 25: the notebook's unchanged() and the grader's record of the arguments after the call
    must see the same changes: a word replaced in a list of strings was invisible to the grader."""
    before = mutable([[argument], {}])
    with pytest.raises(GradingError, match="changed its argument"), unchanged("exercise", argument=argument):
        change(argument)
    after = mutable([[argument], {}])
    assert not same_state(before, after)
    mismatch = compare({"return": None, "args_after": before}, {"return": None, "args_after": after})
    assert mismatch is not None and mismatch.where == ARGUMENTS_AFTER


def test_a_cache_filled_inside_a_list_of_caches_is_no_change_but_a_list_grown_is():
    """unchanged() takes a dataclass argument (a config) field by field, but not one held in a list: a
    list of KV caches stays as given while the caches in it fill, as 07's GPT check needs."""
    from course_lib.kv_cache import KVCache

    caches = [KVCache()]
    with unchanged("GPT", caches=caches):
        caches[0].append(torch.ones(1, 1, 2, 4), torch.ones(1, 1, 2, 4))
    with pytest.raises(GradingError, match=r"caches had 1 items, it now has 2"):
        with unchanged("GPT", caches=caches):
            caches.append(KVCache())
    cfg = _Config()
    with pytest.raises(GradingError, match=r"cfg\.max_len was 16, it is now 0"), unchanged("GPT", cfg=cfg):
        _shorten(cfg)
