"""The old import path of ``evalrun.baseline.rates``: importing it gives that module itself.

Kept while branches written against the old path merge; import ``evalrun.baseline.rates``.
"""

import sys

from evalrun.baseline import rates

sys.modules[__name__] = rates
