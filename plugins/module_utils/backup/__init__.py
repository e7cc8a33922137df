"""Feature: backups of Kueue objects (kueue_backup) and their GitOps export (kueue_gitops). May import the layers,
never another feature.
"""
