"""The Helm tooling layer: the helm binary (helm_runner), the chart values the collection's options become
(helm_values) and Helm's release records (helm_storage). May import common, kube and kueue.
"""
