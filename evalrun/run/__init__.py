"""The run of a tier, top to bottom (``pipeline.py`` strings the steps together; each step is a module here).

``cli`` -> ``commands`` -> ``run`` -> the domain packages -> ``reports_out``: the
commands (``evalrun t1``, ``baseline --update``, ``merge``, ``bites``) call into
this package; it calls the domain packages, which return records, and
``reports_out`` turns records into words.
"""
