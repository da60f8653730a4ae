"""``python -m distprivacy`` runs the command-line interface."""

import sys

from distprivacy.cli import main

sys.exit(main())
