"""Shared helpers of the pytest suite: the test server, catalog snapshots, TAP parsing."""
