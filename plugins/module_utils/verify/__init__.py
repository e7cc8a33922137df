"""The health check of a Kueue installation (Deployments, CRDs, webhooks, APIServices, queues Active), used after
every install and upgrade and by kueue_verify. Reads only. May import common, kube, kueue and helm.
"""
