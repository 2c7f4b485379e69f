"""nbgrader configuration of a student's server on the course hub (deploy/jupyterhub_config.py puts
this folder on the student's JUPYTER_CONFIG_PATH).

It is the course's own nbgrader_config.py (course id, exchange, Validate's time limit and sys.path
guard), with the student's home as the course directory: assignments are fetched there and
submitted from there, and nothing of the instructor's folders is used.
"""
import os

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)
load_subconfig(os.path.join(os.environ["COURSE_ROOT"], "nbgrader_config.py"))  # noqa: F821 (traitlets)
c.CourseDirectory.root = os.path.expanduser("~")
