import sys

from zerolint.cli import main

sys.exit(main())
