"""The Kueue API model: the kinds and their versions (kueue_api, kueue_crds), the release catalog and train, the
manager's configuration, the queue configuration's validation and conversion (queues, multikueue,
admission_checks, managed_fields), how Kueue was installed, the status report, and the one reader of Kueue
objects (reader). Reads clusters through kube; writes nothing. May import common and kube.
"""
