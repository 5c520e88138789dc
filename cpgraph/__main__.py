"""``python -m cpgraph``."""

import sys

from cpgraph.cli import main

sys.exit(main())
