"""What the suite needs of the machine beyond Python, said once: a test that lacks it skips on a
developer's machine and fails in CI (``CI`` set), whose setup installs it, so the sandbox and
browser tests can never vanish from CI unnoticed."""
from __future__ import annotations

import os
import shutil

import pytest


def unavailable(reason: str) -> None:
    """Skip for want of something scripts/setup_system.sh installs; in CI, whose setup runs it, fail."""
    reason = f"{reason}: run scripts/setup_system.sh (make setup does)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI's setup step should have", pytrace=False)
    pytest.skip(reason)


def require_bwrap() -> None:
    """The autograder's sandbox: bubblewrap on the PATH."""
    if shutil.which("bwrap") is None:
        unavailable("bubblewrap (bwrap) is not installed, and the autograder's sandbox needs it")


# A sandboxed test: `@needs_bwrap` (the ``bwrap`` fixture is conftest.py's)
needs_bwrap = pytest.mark.usefixtures("bwrap")
