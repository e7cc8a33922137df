"""Feature: upgrading Kueue across minors (kueue_upgrade_plan, the upgrade playbook's hops) and migrating stored
objects to the served API version (kueue_storage_migration). May import the layers, never another feature.
"""
