"""Fixes: the change a finding asks for, computed from the pod's own facts.

``language`` is the small expression and template language of a pattern's ``fix``
section; ``compute`` runs a finding's fix cases on the container that raised it;
``patches`` builds the reviewable patch against the object that owns the pod; ``files``
writes them for ``--fix-dir``.
"""
