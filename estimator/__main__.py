"""`python -m estimator`: see estimator/cli.py."""

import sys

from .cli import main

sys.exit(main())
