"""``python -m hpcopt.cli``: the same as the ``hpcopt`` console script."""

import sys

from . import main

sys.exit(main())
