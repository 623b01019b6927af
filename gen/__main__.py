import sys

from gen.cli import main

sys.exit(main())
