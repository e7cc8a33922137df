"""Feature: applying a declarative queue configuration (kueue_queues): read, diff, write, prune, wait until Active.
May import the layers (common, kube, kueue, helm, azure, verify, install), never another feature.
"""
