"""Integrations with frameworks, each an optional extra (``pgq-thin[django]``)."""
