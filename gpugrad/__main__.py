"""``python -m gpugrad``: the same command line as the ``gpugrad`` script."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
