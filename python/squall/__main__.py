from __future__ import annotations

import sys

from squall.cli import main

sys.exit(main())
