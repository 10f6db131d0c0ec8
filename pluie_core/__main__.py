"""``python -m pluie_core score ...`` (see pluie_core.cli): the ``pluie`` command, from the checkout."""

import sys

from pluie_core.cli import main

sys.exit(main(prog="python -m pluie_core"))
