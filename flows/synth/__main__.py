"""``python -m flows.synth``: see :mod:`flows.synth.cli`."""

import sys

from .cli import main

sys.exit(main())
