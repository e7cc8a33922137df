"""The base layer: the collection's error types, version parsing, YAML documents, file writing and the Kubernetes
minors it supports. Imports nothing of the collection.
"""
