"""``python -m focused.web.sandbox``: serve the sandbox web until killed."""

import sys

from focused.web.sandbox.server import main

sys.exit(main())
