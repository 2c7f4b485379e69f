"""A live Jupyter kernel for tests: run a notebook once, then rerun single cells cheaply."""
from __future__ import annotations

import os
import queue
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.manager import start_new_kernel


@dataclass
class CellResult:
    ok: bool
    error: str  # "ErrorName: message" when not ok; what the cell wrote to stderr, when that is all


class LiveKernel:
    """A python3 kernel started in ``cwd`` with ``env``; ``run(code)`` executes and reports errors."""

    def __init__(self, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300):
        self.timeout = timeout
        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(cwd),
                                                     env={**os.environ, **(env or {})})

    def run(self, code: str) -> CellResult:
        message_id = self.client.execute(code, store_history=False, allow_stdin=False)
        error, stderr = "", ""
        while True:
            try:
                message = self.client.get_iopub_msg(timeout=self.timeout)
            except queue.Empty:
                raise TimeoutError(f"cell did not finish within {self.timeout} s:\n{code[:200]}") from None
            if message["parent_header"].get("msg_id") != message_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "error":
                error = f"{content['ename']}: {content['evalue']}"
            elif kind == "stream" and content["name"] == "stderr":
                stderr += content["text"]
            elif kind == "status" and content["execution_state"] == "idle":
                # nbgrader's Validator and autograder fail a graded cell that wrote to stderr too
                error = error or (f"wrote to stderr: {stderr[:300]}" if stderr else "")
                return CellResult(ok=not error, error=error)

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)

    def __enter__(self) -> "LiveKernel":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
