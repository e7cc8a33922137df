"""Feature: drift between what a cluster runs and what the inventory declares (kueue_drift_info). May import the
layers, never another feature.
"""
