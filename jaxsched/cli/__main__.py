"""`python -m jaxsched.cli`: the same as the `jaxsched` command."""

import sys

from . import main

sys.exit(main())
