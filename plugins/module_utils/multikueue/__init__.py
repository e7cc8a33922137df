"""Feature: wiring a MultiKueue worker to a manager cluster (kueue_multikueue_worker). May import the layers, never
another feature.
"""
