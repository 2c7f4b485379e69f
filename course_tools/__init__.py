"""The instructor's tooling behind the ``course`` command (``pip install ".[instructor]"``); notebooks never
import it.

Folders by concern: :mod:`.publishing` (release, build, slides, provenance), :mod:`.grading` (the
trusted grader, and in :mod:`.grading.sandboxed` everything that runs inside a student's sandbox),
:mod:`.classroom` (roster, hub, exchange, LMS, grades, similarity). Beside them, what all three use:
the course directory (:mod:`.course`), the source notebooks (:mod:`.notebooks`), reading what
students wrote (:mod:`.untrusted`), every HTML page from its template (:mod:`.pages`); Python is
parsed through :mod:`course_lib.pyparse`. No import climbs: grading imports nothing of classroom or
publishing, and none of them the CLI (tests/test_structure.py). docs/ARCHITECTURE.md says where each
piece runs.
"""
