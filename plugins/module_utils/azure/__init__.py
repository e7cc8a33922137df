"""The Azure layer: Azure credentials and SDK clients, and the AKS managed extension microsoft.kueue (its versions
and settings in extension, its ARM operations in extension_arm). May import common, kube and kueue.
"""
