"""Training of the learned components (``hpcopt.agents``): DRAS (``dras_env``, its gymnasium
environment and episode runner, ``dras_train``, ``jobsets``), the NSA repair operator of the
TJAP family (``nsa_train``) and the OSDEC agent (``osdec_train``).

Application code: trainers run episodes through the driver with the policies and solvers, and
nothing below them imports a trainer.  torch and gymnasium are imported only by the modules
that need them.
"""
