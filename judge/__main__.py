"""``python -m judge`` is the ``judge`` command."""

import sys

from judge.cli import main

sys.exit(main())
