"""`python -m cairn.entrypoints.cli`: the `cairn` command."""

import sys

from cairn.entrypoints.cli.parser import main

sys.exit(main())
