"""``python -m focused.sandbox``: serve the sandbox web until killed."""

import sys

from focused.sandbox.server import main

sys.exit(main())
