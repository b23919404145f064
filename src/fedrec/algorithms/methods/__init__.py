"""The method packages, one per method (or per family of baselines), each exposing ``SPEC`` or
``SPECS``; :data:`fedrec.algorithms.ALGORITHMS` discovers them. Nothing here imports them: a
package is registered by being here."""
