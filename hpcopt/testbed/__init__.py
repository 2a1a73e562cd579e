"""An emulated N-node Slurm cluster on this machine, all of it inside one directory.

``start(directory)`` writes a munge key and a ``slurm.conf`` of its own there, starts
``munged`` (its own socket), ``slurmctld`` and one ``slurmd -N nX`` per node on loopback
ports, and waits until every node is idle; ``stop(directory)`` cancels every job, shuts the
daemons down and waits for the processes its pid files named (never by process name).  Point
Slurm's tools at the cluster with ``SLURM_CONF=directory/slurm.conf`` and
``PATH=directory/bin:$PATH`` (``env(directory)`` gives both).  Needs root (the daemons run as
root, which is what lets several ``slurmd`` share one host).

Two Slurm versions: ``slurm="22.05"`` (default) runs the host's ``slurm-wlm`` and ``munge``
(Debian 12); ``slurm="24.11"`` runs Debian 13's, from a chroot that ``build_chroot`` makes
once with ``debootstrap --variant=minbase trixie`` and keeps in ``chroot_cache`` (default
``CHROOT_CACHE``; reused when present).  The 24.11 daemons run inside the chroot, in a
private mount namespace of their own (``unshare --mount``): ``/proc``, ``/sys``, ``/dev``,
the host's ``/etc`` (for its users: the chroot's ``/etc/passwd`` and ``/etc/group`` link
there, so a user added on the host is known at once) and the testbed's directory at the same
path are mounted there only, so nothing is left mounted on the host when the daemons end.
The client commands in ``directory/bin`` (``squeue``, ``sinfo``, ``sbatch``, ...) run the
chroot's programs with the chroot's own loader and libraries (no ``chroot``), so any user can
run them; ``PluginDir`` in ``slurm.conf`` names the chroot's plugins by their host path,
which a link inside the chroot makes valid there too.

With ``hold=True`` (default) the cluster loads the ``job_submit.lua`` that
``hpcopt.slurm.lua`` prints, so every job submitted to the managed partition (``batch``, the
default one) is held until ``hpcopt slurm run`` releases it; a second partition ``debug``
(same nodes, not held) is there for jobs of another partition.  ``scheduler="backfill"``
runs Slurm's own backfill scheduler (``bf_interval=1``) instead of the FIFO
``sched/builtin``.

Options of ``start``: ``accounting=True`` runs slurmdbd with a MariaDB server of the
testbed's own (data in ``directory/db``, its own socket and loopback port, a database user
with a random password in ``slurmdbd.conf``, mode 600), so that ``sacct`` works: 22.05 uses
the host's ``slurmdbd`` and ``mariadb-server`` packages, 24.11 the chroot's (installed into
a chroot built without them on first use).  ``licenses="bb:100"`` sets ``Licenses=``;
``switch_size=K`` a fat tree (``topology/tree``; ``pod_size=P``: three levels),
``bb_pool="bb:100"`` a ``burst_buffer/lua`` pool, ``ssd="128:4,256:4"`` SSD classes (a gres
``ssd``; with ``ssd_feature="ssd"`` also node features ``ssd128``, ...); ``shared=True`` a partition
``shared`` whose jobs share nodes core by core.

The modules: ``common`` (names, the error, a testbed's record and pid files), ``chroot`` (the
24.11 chroot), ``config`` (slurm.conf and the other files), ``accounting`` (MariaDB and
slurmdbd), ``daemons`` (start and stop), ``cli`` (``hpcopt slurm testbed``).  The testbed is
for tests and measurements; a site runs ``hpcopt slurm run`` on its own cluster without it.
"""


from .chroot import CHROOT_CACHE, DEBIAN_MIRROR, build_chroot, chroot_accounting, missing_tools
from .common import (
    ACCOUNTING_PACKAGES,
    DAEMONS,
    OTHER_PARTITION,
    PARTITION,
    SHARED_PARTITION,
    SPLIT_PARTITION,
    VERSIONS,
    TestbedError,
    daemon,
    env,
    info,
    pids,
    running,
)
from .config import (
    burst_buffer_files,
    licenses_option,
    parse_bb_pool,
    parse_scheduler_parameters,
    parse_ssd,
    slurm_conf,
    topology_conf,
)
from .daemons import free_port_block, start, stepds, stop

__all__ = [
    "ACCOUNTING_PACKAGES", "CHROOT_CACHE", "DAEMONS", "DEBIAN_MIRROR", "OTHER_PARTITION",
    "PARTITION", "SHARED_PARTITION", "SPLIT_PARTITION", "VERSIONS", "TestbedError",
    "build_chroot", "burst_buffer_files", "chroot_accounting", "daemon", "env",
    "free_port_block", "info", "missing_tools", "parse_bb_pool", "licenses_option",
    "parse_scheduler_parameters", "parse_ssd", "pids", "running", "slurm_conf", "start",
    "stepds", "stop", "topology_conf",
]
