"""``python -m zyx``."""
import sys

from zyx.cli import main

sys.exit(main())
