"""Runtime learned components: what policies and solver backends load and run.

The DRAS agents and their state encoding (``dras``, ``dras_state``), the NSA repair operator
of the TJAP family (``nsa``, loaded by the DCAS ``nsa`` backend), the OSDEC agent
(``osdec_agent``), the ASA queue-wait estimator (``asa``), the checkpoint reader
(``checkpoint``) and the shipped checkpoints (``CHECKPOINTS``).  They depend only on the
domain types, so the solvers and the policies may load them; what runs episodes through the
driver to train them is ``hpcopt.trainers``.

torch is imported only inside the submodules that need it, so ``import hpcopt`` and
``import hpcopt.agents`` stay fast and work without the ``ml`` extra.
"""

from pathlib import Path

CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"
