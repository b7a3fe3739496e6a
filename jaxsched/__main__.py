"""`python -m jaxsched`: the same as the `jaxsched` command."""

import sys

from .cli import main

sys.exit(main())
