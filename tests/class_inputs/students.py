"""Students acting on the course's exchange as their own Unix accounts (tests/accounts.py runs it as root).

Reads a plan from the JSON file named by its argument: ``{"course": PATH, "inbound": PATH,
"together": BOOL, "released": PATH or null, "steps": [{"login", "assignment", "notebook", "code"}, ...]}``;
writes ``[{"login", "status", "log"}, ...]`` to stdout.

nbgrader is imported once, here; each step is a child forked from this process that drops to the
student's account (groups, gid, uid) with the student's environment (HOME, the students' Jupyter
configuration of deploy/jupyter/student, as the hub gives it) and then either runs nbgrader's own
``nbgrader submit`` (after writing their notebook into ~/<assignment>/) or runs the step's Python.
With ``together``, every child waits on one pipe and all are released at the same moment; the file
``released`` is then created, for whoever waits to act while they do.
"""
import json
import os
import pwd
import shutil
import sys
import tempfile
import traceback


def run_step(step: dict, course: str, inbound: str) -> int:
    user = pwd.getpwnam(step["login"])
    os.setgroups([])
    os.setgid(user.pw_gid)
    os.setuid(user.pw_uid)
    os.environ.update(HOME=user.pw_dir, USER=user.pw_name, LOGNAME=user.pw_name, COURSE_ROOT=course,
                      JUPYTER_CONFIG_PATH=os.path.join(course, "deploy", "jupyter", "student"))
    os.environ.pop("JUPYTER_DATA_DIR", None)
    os.chdir(user.pw_dir)
    if step["code"]:
        scope = {"course": course, "login": user.pw_name, "home": user.pw_dir, "inbound": inbound}
        exec(compile(step["code"], f"<step of {user.pw_name}>", "exec"), scope)
        return 0
    folder = os.path.join(user.pw_dir, step["assignment"])
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{step['assignment']}.ipynb"), "w") as notebook:
        notebook.write(step["notebook"])
    from nbgrader.apps.nbgraderapp import NbGraderApp

    try:
        NbGraderApp.launch_instance(argv=["submit", step["assignment"]])
    except SystemExit as exit:
        return exit.code or 0
    return 0


def main() -> None:
    with open(sys.argv[1]) as handle:
        plan = json.load(handle)
    from nbgrader.apps.nbgraderapp import NbGraderApp  # noqa: F401 (imported before the forks, once)

    logs = tempfile.mkdtemp(prefix="course-students-")
    release_read, release_write = os.pipe()
    statuses, waiting = {}, {}
    for number, step in enumerate(plan["steps"]):
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                os.close(release_write)
                fd = os.open(os.path.join(logs, f"{number}.log"), os.O_WRONLY | os.O_CREAT,
                             0o600)  # kept as they drop
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                if plan["together"]:
                    os.read(release_read, 1)  # returns when the parent closes its end: everyone at once
                status = run_step(step, plan["course"], plan["inbound"])
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        if plan["together"]:
            waiting[number] = pid
        else:
            statuses[number] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    os.close(release_write)
    if plan["released"]:
        open(plan["released"], "w").close()
    for number, pid in waiting.items():
        statuses[number] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    results = []
    for number, step in enumerate(plan["steps"]):
        with open(os.path.join(logs, f"{number}.log")) as handle:
            results.append({"login": step["login"], "status": statuses[number], "log": handle.read()[-4000:]})
    shutil.rmtree(logs, ignore_errors=True)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
