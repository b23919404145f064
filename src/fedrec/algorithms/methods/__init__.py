"""The method packages, one per method (or per family of baselines), each describing itself in a
torch-free ``meta.py`` (``METHOD`` or ``METHODS``, read by
:func:`fedrec.algorithms.index.method_index` without importing the package) and exposing
``SPEC`` or ``SPECS``; :data:`fedrec.algorithms.ALGORITHMS` discovers them. Nothing here imports
them: a package is registered by being here."""
