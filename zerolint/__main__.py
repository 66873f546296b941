"""``python -m zerolint``: as the installed ``zerolint`` command.

``python -m`` puts the current folder first on ``sys.path``, where a project's own
``z3.py`` or ``libcst.py`` would be imported in place of the library (Python 3.11's ``-P``
leaves it out). zerolint imports nothing of the code it checks: the folder is taken off
again, as the installed command never has it.
"""

import os
import sys

if sys.path and sys.path[0] in ("", os.getcwd()) and not sys.flags.safe_path:
    del sys.path[0]

from zerolint.cli import entry

entry()
