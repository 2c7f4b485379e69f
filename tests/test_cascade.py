"""One bug costs one exercise: a wrong function fails its own graded cells and no other.

Later exercises call earlier ones (02's masked_softmax calls softmax, 03's MultiHeadAttention
split_heads, 05's layers the FFN, 06's BLEU ngrams); their checks bind those names to course_lib's
reference versions (course_lib.grading.bind). Here, for one function per notebook that others
depend on, a catalogued bug (tests/bugs) is injected into the executed solution notebook and every
graded cell is rerun: exactly the buggy function's own cells must fail.
"""
from __future__ import annotations

import pytest

from .bugs import catalogue
from .conftest import ASSIGNMENTS
from .notebook_session import session_group, solution_session

# assignment -> [(graded name others depend on, description of the bug in tests/bugs, its own cells)]
CASCADES = {
    "01_rnn_baselines": [("rnn_cell_step", "bias forgotten", {"c07-test-cell"})],
    "02_attention": [("softmax", "always normalises the last axis, ignoring dim", {"a09-test-softmax"}),
                     ("masked_softmax", "mask inverted (True = hidden)", {"a12-test-masked"}),
                     ("AdditiveAttention", "no tanh", {"a29-test-additive"})],
    "03_multihead_attention": [("split_heads", "view without transpose", {"b16-test-split"}),
                               ("merge_heads", "reshape without transpose", {"b18-test-merge"}),
                               ("causal_mask", "strict: a position may not see itself", {"b08-test-causal"})],
    "05_transformer": [("PositionwiseFeedForward", "no ReLU between the two layers", {"c08-test-ffn"})],
    "06_bleu": [("ngrams", "off by one: drops the last n-gram", {"b09-test-ngrams"}),
                ("modified_precision",
                 "no clipping: every n-gram found in a reference counts in full", {"b13-test-precision"}),
                ("brevity_penalty", "inverted ratio: exp(1 - c/r)", {"b20-test-bp"})],
    "07_language_model": [
        ("RMSNorm", "subtracts the mean first (LayerNorm without bias)", {"g05-test-rmsnorm"}),
        ("SwiGLU", "SiLU on the value branch w3 instead of the gate w1", {"g08-test-swiglu"}),
        ("CausalSelfAttention", "RoPE applied to the values too", {"g11-test-attention"}),
        ("GPTBlock", "no residual around the FFN", {"g14-test-block"}),
        ("sample_next", "top-p drops the token that crosses p", {"g20-test-sample"})
    ],
}
# 04_positional_encoding has no graded name that another one of its exercises calls.


def _bug(assignment_id: str, target: str, description: str):
    matches = [
        bug for bug in catalogue(assignment_id) if bug.target == target and bug.description == description
    ]
    assert len(matches) == 1, f"tests/bugs/{assignment_id}.py has no bug {target}: {description!r}"
    return matches[0]


def test_cascade_bugs_exist():
    for assignment_id, cases in CASCADES.items():
        for target, description, _ in cases:
            _bug(assignment_id, target, description)


@pytest.mark.notebook
@pytest.mark.parametrize("assignment", [session_group(a) for a in ASSIGNMENTS if a.id in CASCADES])
def test_one_bug_fails_only_its_own_cells(assignment):
    problems = []
    with solution_session(assignment) as session:
        for target, description, own in CASCADES[assignment.id]:
            bug = _bug(assignment.id, target, description)
            defined = session.run(bug.code)
            assert defined.ok, f"the bug {target}: {description} does not run: {defined.error}"
            failed = session.failures()
            session.restore(target)
            if set(failed) != own:
                problems.append(
                    f"bug in {target} ({description}): expected exactly {sorted(own)} to fail, got " +
                    ("; ".join(f"{cell}: {error}" for cell, error in failed.items()) or "none"))
    assert not problems, "\n".join(problems)
