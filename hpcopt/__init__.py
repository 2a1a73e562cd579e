"""hpcopt: optimization models and solvers for HPC batch-scheduling window decisions."""
__version__ = "0.1.0"
