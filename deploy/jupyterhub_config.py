"""JupyterHub for a course on one machine, started by ``course hub`` (course_tools/classroom/hub.py),
which sets the environment variables read here.

- Who logs in: the students of the roster (students.csv, see course_tools/classroom/roster.py) and
  the instructors named with ``course hub --instructor``, with their Unix password (PAM). Each
  one's JupyterLab runs as their own Unix user, so nbgrader's exchange permissions hold: a student
  can submit but cannot read another student's submission or feedback.
- Students get JupyterLab with nbgrader's Assignments tab and Validate button, and the course's
  nbgrader configuration (deploy/jupyter/student/); the formgrader, course list and assignment
  creation are switched off for them. Instructors open the course folder with the formgrader.
- Of the course folder, students can read only its public entries (course_tools/classroom/access.py:
  the release, course_lib, build/data, nbgrader_config.py, deploy/jupyter/student/, .venv, the
  exchange); their servers find the data there through COURSE_DATA_DIR, whatever folder they work in.
- Only 127.0.0.1 listens: put a TLS reverse proxy in front to open it to a class.
"""
import os
from pathlib import Path

from course_tools.classroom.roster import ROSTER, hub_logins

c = get_config()  # noqa: F821 (provided by traitlets when JupyterHub loads this file)

deploy = Path(__file__).resolve().parent
course = Path(os.environ["COURSE_ROOT"])
state = Path(os.environ["COURSE_HUB_STATE"])  # the hub's database, cookie secret, logs
port = int(os.environ["COURSE_HUB_PORT"])
instructors = {name for name in os.environ.get("COURSE_HUB_INSTRUCTORS", "").split(",") if name}
students = set(hub_logins(course / ROSTER))

c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = port
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = port + 1
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{port + 2}"
# configurable-http-proxy from the npm registry, installed by scripts/setup_system.sh
c.ConfigurableHTTPProxy.command = [str(course / "build" / "vendor" / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")

c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = students | instructors
c.Authenticator.admin_users = instructors

c.JupyterHub.spawner_class = "localprocess"
# The course's own environment (`course hub --python`, default: the hub's own Python): the same
# JupyterLab, nbgrader and course_lib as the instructor's.
c.Spawner.cmd = [os.environ["COURSE_HUB_PYTHON"], "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120  # a first start on a busy 2-core machine imports torch and JupyterLab


def course_environment(spawner):
    """Students: their home, the student configuration, the course's data; instructors: the course folder."""
    spawner.environment = {**spawner.environment, "COURSE_ROOT": str(course)}
    if spawner.user.name in instructors:
        spawner.notebook_dir = str(course)
    else:
        spawner.environment["JUPYTER_CONFIG_PATH"] = str(deploy / "jupyter" / "student")
        # course_lib looks for build/data above the working folder, which is the student's home here
        spawner.environment["COURSE_DATA_DIR"] = str(course / "build" / "data")


c.Spawner.pre_spawn_hook = course_environment
