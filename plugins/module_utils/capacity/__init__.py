"""Feature: the capacity report (kueue_capacity_info): quotas, usage and the node pools behind them. May import the
layers, never another feature.
"""
