"""The old import path of ``evalrun.baseline.settings``: importing it gives that module itself.

Kept while branches written against the old path merge; import ``evalrun.baseline.settings``.
"""

import sys

from evalrun.baseline import settings

sys.modules[__name__] = settings
