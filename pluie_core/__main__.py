"""``python -m pluie_core score ...`` (see pluie_core.cli)."""
import sys

from pluie_core.cli import main

sys.exit(main())
