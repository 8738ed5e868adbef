import sys

from squall.cli import main

sys.exit(main())
