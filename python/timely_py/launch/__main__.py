"""``python -m timely_py.launch``: runs the launcher (`entry.main`) and exits with its status."""

import sys

from .entry import main

sys.exit(main())
