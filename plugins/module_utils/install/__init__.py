"""Installing Kueue with Helm (helm_install: preflight, release train, helm upgrade --install, then verify). May
import common, kube, kueue, helm, azure and verify.
"""
