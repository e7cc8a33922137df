"""The local Kubernetes control plane that every cluster-facing test runs on (issue 2).

Not part of the shipped collection (galaxy.yml's build_ignore excludes it).
"""
