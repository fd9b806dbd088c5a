"""The old import path of ``evalrun.baseline.judges``: importing it gives that module itself.

Kept while branches written against the old path merge; import ``evalrun.baseline.judges``.
"""

import sys

from evalrun.baseline import judges

sys.modules[__name__] = judges
