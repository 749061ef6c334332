"""`python -m torch_autograph code|graph|explain ...`: see `torch_autograph.cli`."""

import sys

from .cli import main

sys.exit(main())
