import os
import sys

from gen.cli import main

try:
    code = main()
    sys.stdout.flush()
except BrokenPipeError:
    # the reader of our output went away (`python -m gen list | head`): no
    # traceback, and stdout pointed at devnull so that Python's own flush at
    # exit does not raise again; exit 1 as Python's docs advise
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    code = 1
sys.exit(code)
