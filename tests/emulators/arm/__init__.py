"""An emulator of Azure Resource Manager and Entra ID for the AKS managed-extension path (issue 6).

See README.md in this folder: what is implemented, how it departs from ARM, and how a
test flips a fault or cluster-property switch.
"""
