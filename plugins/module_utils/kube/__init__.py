"""The Kubernetes access layer: the lazy import of the kubernetes client, the JSON-in/JSON-out cluster requests
(kueue_cluster), the module's client and kubeconfig handling (kube_client, module), waits, the cluster's
identity and the translation of the API server's refusals (server_errors, schema_check). May import common only.
"""
