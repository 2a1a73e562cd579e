"""The ``job_submit.lua`` that holds every job submitted to the partitions hpcopt schedules,
and keeps their users from starting or reshaping those jobs themselves.

Slurm runs ``slurm_job_submit`` for each submission when ``JobSubmitPlugins=lua`` is set and
the script lies beside ``slurm.conf``.  Setting the priority to 0 holds the job and the
admin comment ``hpcopt:held`` marks it as hpcopt's, so users submit as usual and only
``hpcopt slurm run`` (``scontrol release``) starts their jobs; jobs of other partitions are
left alone.  Slurm shows such a hold as JobHeldUser, which the job's owner could lift:
``slurm_job_modify`` therefore refuses every change by a user who is not one of the admins
(root always; the site adds SlurmUser and the adapter's user) that would start a managed
job, reshape it (nodes, tasks, CPUs, memory, time limit raised, licenses, array throttle,
nodes asked or excluded, features, GRES/TRES, QOS, reservation) or move it into or out of
the managed partition.  A lower time limit is allowed (a smaller request only helps);
renaming, comments, mail and dependencies stay the user's (the requeue flag does not), and
so does a later begin time of a job still held; a begin time of now or earlier, or any begin
time of a job no longer held (released, or back from a requeue), is refused: it would start
the job without hpcopt.

The script is ``job_submit.lua`` beside this module (package data), valid Lua as it lies
(``luac -p``); its places ``--[[@NAME@]]`` (and ``@PARTITION@``, ``@MARK@`` in text) are
filled here.

With a wake port the submit hook also wakes the adapter (``hpcopt.slurm.wake``) at each
managed submission, so that a job submitted to free nodes starts within a cycle's read, not
an interval: one short background process per submission (Lua has no sockets of its own).
"""

from __future__ import annotations

import pwd
from collections.abc import Iterable
from importlib import resources

from ..errors import OptionError
from .wake import submit_command

MARK = "hpcopt:held"


def job_submit_lua(partition: str | Iterable[str] = "batch", admins: Iterable[int] = (0,),
                   wake_port: int | None = None) -> str:
    """The script for ``partition`` (``hpcopt slurm job-submit-lua``; a list of names: each
    of them is managed, and a submission naming several is narrowed to the first managed
    one): only the uids in ``admins`` (root always among them) may release or change the
    partitions' jobs; with ``wake_port`` each managed submission wakes the adapter listening
    there."""
    names = partition_names(partition)
    uids = {0}
    for uid in admins:
        if isinstance(uid, bool) or not isinstance(uid, int) or not 0 <= uid < 2**32 - 2:
            raise OptionError(f"--admin: a user id expected, got {uid!r}")
        uids.add(uid)
    table = ", ".join(f"[{uid}] = true" for uid in sorted(uids))
    wake = "nil" if wake_port is None else f'"{submit_command(wake_port)}"'
    said = (f'partition "{names[0]}"' if len(names) == 1 else
            "partitions " + ", ".join(f'"{n}"' for n in names))
    template = resources.files(__package__).joinpath("job_submit.lua").read_text("utf-8")
    return (template.replace("@PARTITION@", said)
            .replace("--[[@MANAGED@]]", ", ".join(f'["{n}"] = true' for n in names))
            .replace("--[[@ADMINS@]]", table).replace("@MARK@", MARK)
            .replace("--[[@WAKE@]] nil", wake))


def partition_names(partition: str | Iterable[str]) -> tuple[str, ...]:
    """Managed partition names, each checked (``--partition``: one name, or several given
    again or as a comma list), in the order given, without repeats."""
    given = [partition] if isinstance(partition, str) else list(partition)
    names: list[str] = []
    for text in given:
        for name in str(text).split(",") if text else [""]:
            if not name or any(c.isspace() or not c.isprintable() or c in "\"'\\[]"
                               for c in name):
                raise OptionError(f"--partition: a Slurm partition name expected (no space, "
                                  f"quote, backslash, bracket or newline), got {text!r}")
            if name not in names:
                names.append(name)
    if not names:
        raise OptionError("--partition: at least one partition name expected")
    return tuple(names)


def admin_uids(users: Iterable[str]) -> tuple[int, ...]:
    """The uids of ``--admin`` users, each a name or a uid (names looked up here, now)."""
    uids = []
    for user in users:
        if user.isdigit():
            uids.append(int(user))
            continue
        try:
            uids.append(pwd.getpwnam(user).pw_uid)
        except KeyError:
            raise OptionError(f"--admin: no user {user!r} on this machine "
                              "(give a user name or a uid)") from None
    return tuple(uids)
