"""nbgrader configuration of the course (read by nbgrader's apps, JupyterLab's extensions and `course`)."""
import os

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

course_root = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.course_id = "attention-transformers"
c.CourseDirectory.root = course_root
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(course_root, "gradebook.db")

# Under the course folder, so neither students nor CI need write access to /usr/local/share.
c.Exchange.root = os.path.join(course_root, "build", "exchange")
os.makedirs(c.Exchange.root, exist_ok=True)

# A deleted or retyped test cell is put back from the source notebook before grading.
c.OverwriteCells.add_missing_cells = True

# Per-student hidden inputs (README, "Per-student hidden inputs"): how many variants of its hidden
# checks' inputs each assignment has; a student's is a hash of their id. 1: the notebook's own for all.
c.HiddenVariants.count = 1

# Seconds per cell. The smoke profile (chosen when nbgrader sets NBGRADER_EXECUTION) keeps whole
# notebooks under a minute, so a cell that runs this long is stuck.
c.Execute.timeout = 120

# The kernel drops the notebook's own folder from sys.path before any cell runs: a course_lib.py
# or torch.py placed beside a submitted notebook must never replace the installed packages.
c.Execute.extra_arguments = [
    "--HistoryManager.hist_file=:memory:",
    "--IPKernelApp.ignore_cwd=True",
    "--IPKernelApp.exec_lines=['import os, sys; "
    "sys.path[:] = [p for p in sys.path if p not in (\"\", \".\", os.getcwd())]']",
]

# nbgrader's gradebook runs `alembic` as a subprocess: find the one beside this Python even when
# Jupyter was started as .venv/bin/jupyter without activating the environment.
import sys  # noqa: E402

_tools = os.path.dirname(sys.executable)
if _tools not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _tools + os.pathsep + os.environ.get("PATH", "")
